// tools/gen_docs.cpp — writes corral's man page (corral.1, roff) and its bash
// completion from the tables the program itself reads: `corral run`'s option
// table (run/options.cpp) and the subcommand list (tools/subcommands.hpp), so
// neither can miss an option `corral run` takes. Run by meson at build time:
//
//   gen_docs man OUT.1 | gen_docs bash OUT | gen_docs options (one name a line)
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>

#include "run/request.hpp"
#include "tools/subcommands.hpp"

namespace {

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

std::string man_page() {
    std::ostringstream m;
    m << ".TH CORRAL 1 \"\" \"corral " << CORRAL_VERSION << "\" \"User Commands\"\n"
      << ".SH NAME\ncorral \\- run commands and coding agents in throwaway Linux namespace sandboxes\n"
      << ".SH SYNOPSIS\n.B corral\n.I SUBCOMMAND\n[\\fIOPTIONS\\fR]\n.br\n"
      << ".B corral run\n[\\fIOPTIONS\\fR] \\fB\\-\\-\\fR \\fICMD\\fR [\\fIARGS\\fR...]\n"
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
    m << ".SH RUN OPTIONS\n";
    for (const auto& o : corral::run::run_option_table()) {
        m << ".TP\n.B " << roff(o.name);
        if (!o.placeholder.empty()) m << " \\fI" << roff(o.placeholder) << "\\fR";
        m << "\n" << roff(joined(o.help)) << "\n";
    }
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

// A placeholder naming a file or directory gets the shell's file completion.
const char* value_kind(std::string_view placeholder) {
    if (placeholder == "DIR" || placeholder == "host|DIR") return "dir";
    if (placeholder == "F" || placeholder == "SRC:DST") return "file";
    return "";
}

std::string bash_completion() {
    std::string subcommands, options, dir_options, file_options, value_options;
    for (const auto& s : kSubcommandInfo) subcommands += (subcommands.empty() ? "" : " ") + std::string(s.name);
    for (const auto& o : corral::run::run_option_table()) {
        std::string name(o.name);
        options += (options.empty() ? "" : " ") + name;
        if (o.placeholder.empty()) continue;
        value_options += "|" + name;
        std::string_view kind = value_kind(o.placeholder);
        if (kind == "dir") dir_options += "|" + name;
        if (kind == "file") file_options += "|" + name;
    }
    auto pattern = [](const std::string& alternatives) {
        return alternatives.empty() ? std::string("__none__") : alternatives.substr(1);
    };
    std::ostringstream b;
    b << "# bash completion for corral (generated by tools/gen_docs from corral's option tables; do not edit)\n"
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
      << "        return 0 ;;\n"
      << "    run)\n"
      << "        # After `--` (or the first word that is not an option) come CMD and its arguments.\n"
      << "        for ((i = 2; i < COMP_CWORD; i++)); do\n"
      << "            case \"${COMP_WORDS[i]}\" in\n"
      << "            --) COMPREPLY=($(compgen -c -- \"$cur\")); return 0 ;;\n"
      << "            " << pattern(value_options) << ") ((i++)) ;;\n"
      << "            -*) ;;\n"
      << "            *) COMPREPLY=($(compgen -f -- \"$cur\")); return 0 ;;\n"
      << "            esac\n"
      << "        done\n"
      << "        case \"$prev\" in\n"
      << "        " << pattern(dir_options) << ") COMPREPLY=($(compgen -d -- \"$cur\")); return 0 ;;\n"
      << "        " << pattern(file_options) << ") COMPREPLY=($(compgen -f -- \"$cur\")); return 0 ;;\n"
      << "        " << pattern(value_options) << ") return 0 ;;\n"
      << "        esac\n"
      << "        COMPREPLY=($(compgen -W \"" << options << " --\" -- \"$cur\"))\n"
      << "        return 0 ;;\n"
      << "    *)\n"
      << "        COMPREPLY=($(compgen -W \"--help\" -- \"$cur\"))\n"
      << "        return 0 ;;\n"
      << "    esac\n"
      << "}\n"
      << "complete -F _corral corral\n";
    return b.str();
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
        for (const auto& o : corral::run::run_option_table()) std::cout << o.name << "\n";
        for (const auto& s : kSubcommandInfo) std::cout << "subcommand " << s.name << "\n";
        return 0;
    }
    if (what == "man" && argc == 3) return write_file(argv[2], man_page());
    if (what == "bash" && argc == 3) return write_file(argv[2], bash_completion());
    std::fprintf(stderr, "usage: gen_docs man OUT.1 | gen_docs bash OUT | gen_docs options\n");
    return 2;
}
