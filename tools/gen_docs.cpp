// tools/gen_docs.cpp — writes corral's man page (corral.1, roff) and its bash
// completion from the tables the program itself reads: every subcommand's
// option table (cli/command_table.hpp; `corral run`'s is run/options.cpp) and
// the subcommand list (tools/subcommands.hpp), so neither can miss an option
// a subcommand takes. Run by meson at build time:
//
//   gen_docs man OUT.1 | gen_docs bash OUT | gen_docs options (one name a line)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command_table.hpp"
#include "oci/cli_args.hpp"
#include "run/request.hpp"
#include "tools/subcommands.hpp"

namespace {

using corral::OptionSpec;
using corral::cli::CommandTable;
using corral::cli::kSubcommandInfo;

// roff: a backslash is \e, a '-' in an option name \- (a real hyphen, so man
// pages can be searched for "--bind"), and a line may not start with '.' or '\''.
std::string roff(std::string_view text) {
    std::string out;
    bool line_start = true;
    for (char c : text) {
        if (line_start && (c == '.' || c == '\'')) out += "\\&";
        if (c == '\\') out += "\\e";
        else if (c == '-') out += "\\-";
        else out += c;
        line_start = c == '\n';
    }
    return out;
}

// An option's help lines as one paragraph (the table wraps them for --help).
std::string joined(std::string_view help) {
    std::string out;
    for (char c : help) out += c == '\n' ? ' ' : c;
    return out;
}

// A .TP paragraph per option: "--all, -a DIR" and its help.
void man_options(std::ostringstream& m, std::span<const OptionSpec> options) {
    for (const auto& o : options) {
        m << ".TP\n.B " << roff(o.name);
        if (!o.short_name.empty()) m << ", " << roff(o.short_name);
        if (!o.placeholder.empty()) m << " \\fI" << roff(o.placeholder) << "\\fR";
        m << "\n" << roff(joined(o.help)) << "\n";
    }
}

std::string command_name(const CommandTable& t) {
    return "corral " + std::string(t.subcommand) + (t.action.empty() ? "" : " " + std::string(t.action));
}

// Every other subcommand's options, a subsection each.
void man_other_options(std::ostringstream& m) {
    m << ".SH OPTIONS OF THE OTHER SUBCOMMANDS\n"
      << "Each also takes \\fB\\-h\\fR, \\fB\\-\\-help\\fR.\n";
    for (const auto& t : corral::cli::command_tables()) {
        if (t.subcommand == "run") continue;
        m << ".SS " << roff(command_name(t)) << "\n";
        if (t.options().empty()) m << "No options.\n";
        man_options(m, t.options());
    }
}

std::string man_page() {
    std::ostringstream m;
    m << ".TH CORRAL 1 \"\" \"corral " << CORRAL_VERSION << "\" \"User Commands\"\n"
      << ".SH NAME\ncorral, corral\\-exec \\- run commands and coding agents in throwaway Linux namespace sandboxes\n"
      << ".SH SYNOPSIS\n.B corral\n.I SUBCOMMAND\n[\\fIOPTIONS\\fR]\n.br\n"
      << ".B corral run\n[\\fIOPTIONS\\fR] \\fB\\-\\-\\fR \\fICMD\\fR [\\fIARGS\\fR...]\n.br\n"
      << ".B corral\\-exec\n[\\fIOPTIONS\\fR] \\fISESSION\\fR \\fB\\-\\-\\fR \\fICMD\\fR [\\fIARGS\\fR...]\n"
      << ".SH DESCRIPTION\n"
      << "corral runs a command, or an organisation's coding agent, in a fresh sandbox: new PID, mount, network,\n"
         "IPC, UTS and cgroup namespaces, a read\\-only root file system, only a loopback network whose one way out\n"
         "is corral's credential\\-injecting gateway, its own UID with no capabilities, no_new_privs and a seccomp\n"
         "filter. When the command exits, everything it started is killed and corral verifies that nothing of the\n"
         "run is left on the host.\n"
      << ".SH SUBCOMMANDS\n";
    for (const auto& s : kSubcommandInfo)
        m << ".TP\n.B " << roff(s.name) << "\n" << roff(s.summary) << ".\n";
    m << ".PP\n\\fBcorral help\\fR \\fISUBCOMMAND\\fR (or \\fBcorral\\fR \\fISUBCOMMAND\\fR \\fB\\-\\-help\\fR) explains each one.\n";
    m << ".PP\n\\fBcorral\\-exec\\fR is \\fBcorral exec\\fR as a small executable of its own (the same options, output,\n"
         "status and refusals): an exec into a live session starts faster through it.\n";
    m << ".SH RUN OPTIONS\n";
    man_options(m, corral::run::run_option_specs());
    man_other_options(m);
    m << ".SH EXIT STATUS\n"
      << "\\fBcorral run\\fR exits with the command's status, or 128+N when it was killed by signal N; 124 when the\n"
         "\\fB\\-\\-timeout\\fR deadline was reached, 125 when the sandbox could not be set up, 126 when teardown\n"
         "failed, 127 when the command was not found in the sandbox, 2 on a malformed command line.\n"
         "\\fBcorral doctor\\fR exits 0 when every check is ok, 1 otherwise; \\fBcorral validate\\fR 0 when every\n"
         "worker could start, 2 otherwise. \\fBcorral help run\\fR has the details.\n"
      << ".SH ENVIRONMENT\n"
      << ".TP\n.B CORRAL_STATE_DIR\ndefault for \\fB\\-\\-state\\-dir\\fR (otherwise /var/lib/corral).\n"
      << ".TP\n.B CORRAL_LOG=debug\nprint the duration of every setup and teardown phase.\n"
      << ".SH FILES\n"
      << ".TP\n.I /var/lib/corral/runs/RUN\\-ID/\na run's stdout.log, stderr.log and run.json.\n"
      << ".TP\n.I ORG/org.toml, ORG/workers/NAME/worker.toml\nan organisation (see \\fBcorral validate\\fR).\n"
      << ".SH SEE ALSO\n"
      << "The project's docs/operations.md, docs/configuration.md, docs/architecture.md and docs/security.md.\n";
    return m.str();
}

// What a command's positional arguments are, where their values live on disk:
// offered from `corral __complete KIND` (tools/cmd_complete.cpp) at each TAB.
struct Positional {
    std::string_view subcommand, action, kind;
};
constexpr Positional kPositionals[] = {
    {"logs", "", "runs"},          {"stop", "", "runs"},           {"inspect", "", "runs"},
    {"journal", "verify", "journals"}, {"exec", "", "sessions"},       {"session", "stop", "sessions"},
    {"image", "inspect", "images"}, {"image", "rm", "images"},
    {"diff", "", "runs"},          {"apply", "", "runs"},          {"discard", "", "runs"},
};

std::string_view positional_kind(std::string_view subcommand, std::string_view action) {
    for (const auto& p : kPositionals)
        if (p.subcommand == subcommand && p.action == action) return p.kind;
    return {};
}

// A placeholder naming a file or directory gets the shell's file completion;
// --worker NAME the workers of the line's --config DIR.
const char* value_kind(std::string_view name, std::string_view placeholder) {
    if (name == "--worker") return "worker";
    if (placeholder == "DIR" || placeholder == "host|DIR" || placeholder == "ORG") return "dir";
    if (placeholder == "F" || placeholder == "FILE" || placeholder == "SRC:DST" || placeholder == "PUBKEY") return "file";
    return "";
}

// One table's words for the completion: its options, and which take a
// value, a directory, a file ("a|b|c" patterns, "__none__" when empty).
struct CompletionWords {
    std::string options, values, dirs, files, workers;

    explicit CompletionWords(std::span<const OptionSpec> table) {
        for (const auto& o : table) {
            for (std::string_view n : {o.short_name, o.name}) {
                if (n.empty()) continue;
                const std::string name(n);
                options += (options.empty() ? "" : " ") + name;
                if (o.placeholder.empty()) continue;
                values += "|" + name;
                const std::string_view kind = value_kind(name, o.placeholder);
                if (kind == "dir") dirs += "|" + name;
                if (kind == "file") files += "|" + name;
                if (kind == "worker") workers += "|" + name;
            }
        }
    }
    static std::string pattern(const std::string& alternatives) {
        return alternatives.empty() ? std::string("__none__") : alternatives.substr(1);
    }
};

// The value of the option before the cursor, then (a word not starting with
// -) the positional's words from disk, else the table's options.
void complete_table(std::ostringstream& b, std::span<const OptionSpec> table, const std::string& indent,
                    std::string_view positional = {}) {
    const CompletionWords w(table);
    b << indent << "case \"$prev\" in\n"
      << indent << CompletionWords::pattern(w.dirs) << ") COMPREPLY=($(compgen -d -- \"$cur\")); return 0 ;;\n"
      << indent << CompletionWords::pattern(w.files) << ") COMPREPLY=($(compgen -f -- \"$cur\")); return 0 ;;\n"
      << indent << CompletionWords::pattern(w.workers)
      << ") _corral_words workers \"$(_corral_option_value --config)\"; return 0 ;;\n"
      << indent << CompletionWords::pattern(w.values) << ") return 0 ;;\n"
      << indent << "esac\n";
    if (!positional.empty()) {
        // journal verify takes a run's id, or a journal file or directory.
        const bool files_too = positional == "journals";
        b << indent << "if [[ $cur != -* ]]; then\n"
          << indent << "    _corral_words " << (files_too ? "runs" : positional) << " \"$(_corral_option_value --state-dir)\"\n";
        if (files_too) b << indent << "    COMPREPLY+=($(compgen -f -- \"$cur\"))\n";
        b << indent << "    return 0\n" << indent << "fi\n";
    }
    b << indent << "COMPREPLY=($(compgen -W \"" << w.options << (w.options.empty() ? "" : " ") << "--help\" -- \"$cur\"))\n";
}

// `corral run`: after `--` (or the first word that is not an option) come CMD and its arguments.
void complete_run(std::ostringstream& b) {
    const CompletionWords w(corral::run::run_option_specs());
    b << "    run)\n"
      << "        # After `--` (or the first word that is not an option) come CMD and its arguments.\n"
      << "        for ((i = 2; i < COMP_CWORD; i++)); do\n"
      << "            case \"${COMP_WORDS[i]}\" in\n"
      << "            --) COMPREPLY=($(compgen -c -- \"$cur\")); return 0 ;;\n"
      << "            " << CompletionWords::pattern(w.values) << ") ((i++)) ;;\n"
      << "            -*) ;;\n"
      << "            *) COMPREPLY=($(compgen -f -- \"$cur\")); return 0 ;;\n"
      << "            esac\n"
      << "        done\n";
    complete_table(b, corral::run::run_option_specs(), "        ");
    b << "        return 0 ;;\n";
}

// Another subcommand: its table's options, or first its action and then that action's.
void complete_subcommand(std::ostringstream& b, std::string_view subcommand) {
    std::vector<const CommandTable*> tables;
    for (const auto& t : corral::cli::command_tables())
        if (t.subcommand == subcommand) tables.push_back(&t);
    if (tables.empty()) return;
    b << "    " << subcommand << ")\n";
    if (tables.front()->action.empty()) {
        complete_table(b, tables.front()->options(), "        ", positional_kind(subcommand, ""));
        b << "        return 0 ;;\n";
        return;
    }
    std::string actions;
    for (const auto* t : tables) actions += (actions.empty() ? "" : " ") + std::string(t->action);
    b << "        if [[ $COMP_CWORD -eq 2 ]]; then\n"
      << "            COMPREPLY=($(compgen -W \"" << actions << " --help\" -- \"$cur\"))\n"
      << "            return 0\n"
      << "        fi\n"
      << "        case \"${COMP_WORDS[2]}\" in\n";
    for (const auto* t : tables) {
        b << "        " << t->action << ")\n";
        complete_table(b, t->options(), "            ", positional_kind(subcommand, t->action));
        b << "            ;;\n";
    }
    b << "        esac\n"
      << "        return 0 ;;\n";
}

std::string bash_completion() {
    std::string subcommands;
    for (const auto& s : kSubcommandInfo) subcommands += (subcommands.empty() ? "" : " ") + std::string(s.name);
    std::ostringstream b;
    b << "# bash completion for corral (generated by tools/gen_docs from corral's option tables; do not edit)\n"
      << "# The value of option $1 on the line being completed (--state-dir DIR, --config DIR), or nothing.\n"
      << "_corral_option_value() {\n"
      << "    local j\n"
      << "    for ((j = 2; j < COMP_CWORD; j++)); do\n"
      << "        [[ ${COMP_WORDS[j]} == \"$1\" ]] && { printf '%s' \"${COMP_WORDS[j+1]}\"; return; }\n"
      << "        [[ ${COMP_WORDS[j]} == \"$1\"=* ]] && { printf '%s' \"${COMP_WORDS[j]#*=}\"; return; }\n"
      << "    done\n"
      << "}\n"
      << "# Run ids, session names, images or workers, from `corral __complete KIND [DIR]` (the corral\n"
      << "# being completed; it prints only [A-Za-z0-9._-] words and nothing when it cannot read).\n"
      << "_corral_words() {\n"
      << "    COMPREPLY=($(compgen -W \"$(\"${COMP_WORDS[0]}\" __complete \"$1\" \"$2\" 2>/dev/null)\" -- \"$cur\"))\n"
      << "}\n"
      << "_corral() {\n"
      << "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\" i\n"
      << "    COMPREPLY=()\n"
      << "    if [[ $COMP_CWORD -eq 1 ]]; then\n"
      << "        COMPREPLY=($(compgen -W \"" << subcommands << " --help --version\" -- \"$cur\"))\n"
      << "        return 0\n"
      << "    fi\n"
      << "    case \"${COMP_WORDS[1]}\" in\n"
      << "    help)\n"
      << "        [[ $COMP_CWORD -eq 2 ]] && COMPREPLY=($(compgen -W \"" << subcommands << "\" -- \"$cur\"))\n"
      << "        return 0 ;;\n";
    complete_run(b);
    for (const auto& s : kSubcommandInfo)
        if (s.name != "run" && s.name != "help") complete_subcommand(b, s.name);
    b << "    *)\n"
      << "        COMPREPLY=($(compgen -W \"--help\" -- \"$cur\"))\n"
      << "        return 0 ;;\n"
      << "    esac\n"
      << "}\n"
      << "complete -F _corral corral\n";
    return b.str();
}

// corral-oci's page: what it is, and its --help verbatim (the commands and
// options come from its own tables, oci/cli_args.cpp).
std::string oci_man_page() {
    std::ostringstream m;
    m << ".TH CORRAL\\-OCI 1 \"\" \"corral " << CORRAL_VERSION << "\" \"User Commands\"\n"
      << ".SH NAME\ncorral\\-oci \\- corral as an OCI runtime, for podman, containerd and CRI\\-O\n"
      << ".SH SYNOPSIS\n.B corral\\-oci\n[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] \\fIID\\fR\n"
      << ".SH DESCRIPTION\n"
      << "corral\\-oci runs an OCI bundle's process in corral's sandbox, with runc's command line, so that an\n"
         "engine can name it as its runtime. Each container is a corral run (see \\fBcorral\\fR(1)): its record,\n"
         "journal and verified teardown; the bundle's config.json is mapped onto the box, and what corral does\n"
         "differently is noted in the run's directory or refused by name.\n"
      << ".SH USAGE\n.nf\n" << roff(corral::oci::oci_help_text()) << ".fi\n"
      << ".SH SEE ALSO\n\\fBcorral\\fR(1), \\fBpodman\\fR(1), docs/oci\\-runtime.md in corral's source\n";
    return m.str();
}

int write_file(const char* path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
        std::fprintf(stderr, "gen_docs: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string_view what = argc >= 2 ? argv[1] : "";
    if (what == "options" && argc == 2) {
        // Every option of every table once ("--state-dir" is in many).
        std::set<std::string_view> seen;
        for (const auto& t : corral::cli::command_tables())
            for (const auto& o : t.options())
                if (seen.insert(o.name).second) std::cout << o.name << "\n";
        for (const auto& s : kSubcommandInfo) std::cout << "subcommand " << s.name << "\n";
        return 0;
    }
    if (what == "man" && argc == 3) return write_file(argv[2], man_page());
    if (what == "bash" && argc == 3) return write_file(argv[2], bash_completion());
    if (what == "oci-man" && argc == 3) return write_file(argv[2], oci_man_page());
    std::fprintf(stderr, "usage: gen_docs man OUT.1 | gen_docs oci-man OUT.1 | gen_docs bash OUT | gen_docs options\n");
    return 2;
}
