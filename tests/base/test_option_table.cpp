// Unit tests of base/option_table: every path of the one option parser
// (forms, `--`, --help, positionals, the command after them) and each of its
// error texts, and the help rows it builds.
#include <doctest/doctest.h>

#include <cstddef>
#include <initializer_list>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "base/option_table.hpp"
#include "base/sys_error.hpp"

using namespace corral;

namespace {

struct Args {
    std::string dir;
    bool all = false;
    std::vector<std::string> env;
};

const Option<Args> kTable[] = {
    {{"--state-dir", "DIR", "where the runs are"}, [](Args& a, const std::string& v) { a.dir = v; }},
    {{"--all", "", "every run,\nnot only running ones", "-a"}, [](Args& a, const std::string&) { a.all = true; }},
    {{"--env", "K=V", "an entry (repeatable)", {}, true}, [](Args& a, const std::string& v) { a.env.push_back(v); }},
};

// argv for the parser: argv[0] is the subcommand.
struct Argv {
    std::vector<std::string> words;
    std::vector<char*> ptrs;
    Argv(std::initializer_list<std::string> w) : words(w) {
        words.insert(words.begin(), "ps");
        for (auto& s : words) ptrs.push_back(s.data());
    }
    int argc() { return static_cast<int>(ptrs.size()); }
    char** argv() { return ptrs.data(); }
};

struct Parsed {
    Args args;
    CommandLine line;
};

Parsed parse(std::initializer_list<std::string> words, CommandSyntax syntax = {"corral ps"}) {
    Argv a(words);
    Parsed p;
    p.line = parse_options<Args>(syntax, kTable, a.argc(), a.argv(), p.args);
    return p;
}

std::string error_of(std::initializer_list<std::string> words, CommandSyntax syntax = {"corral ps"}) {
    try {
        parse(words, syntax);
    } catch (const UsageError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_CASE("--opt value, --opt=value, a short alias and positionals in any order") {
    auto p = parse({"x", "--state-dir", "/a", "-a", "y", "--env=K=V", "--env", "L=W"});
    CHECK(p.args.dir == "/a");
    CHECK(p.args.all);
    CHECK(p.args.env == std::vector<std::string>{"K=V", "L=W"});
    CHECK(p.line.positionals == std::vector<std::string>{"x", "y"});
    CHECK(p.line.command.empty());
    CHECK_FALSE(p.line.help);
    CHECK(parse({"--state-dir="}).args.dir.empty());
    CHECK(parse({"-"}).line.positionals == std::vector<std::string>{"-"});
}

TEST_CASE("`--` ends the options: the rest are positionals, or the command") {
    auto p = parse({"--all", "--", "--state-dir", "x"});
    CHECK(p.args.all);
    CHECK(p.args.dir.empty());
    CHECK(p.line.positionals == std::vector<std::string>{"--state-dir", "x"});
    CommandSyntax with_command{"corral exec", 1};
    auto c = parse({"ID", "-a", "cmd", "--all", "--", "x"}, with_command);
    CHECK(c.line.positionals == std::vector<std::string>{"ID"});
    CHECK(c.args.all);
    CHECK(c.line.command == std::vector<std::string>{"cmd", "--all", "--", "x"});
    auto d = parse({"--", "ID", "x"}, with_command);
    CHECK(d.line.positionals.empty());
    CHECK(d.line.command == std::vector<std::string>{"ID", "x"});
    CommandSyntax run_like{"corral run", 0};
    auto r = parse({"-a", "true", "--all"}, run_like);
    CHECK(r.line.command == std::vector<std::string>{"true", "--all"});
}

TEST_CASE("--help and -h ask for help; nothing after them is read") {
    CHECK(parse({"--help"}).line.help);
    CHECK(parse({"-a", "-h", "--bogus"}).line.help);
    CHECK(parse({"--state-dir", "/x", "--help", "--state-dir"}).args.dir == "/x");
    CHECK_FALSE(parse({"--", "--help"}).line.help);
}

TEST_CASE("each usage error is one line naming the option") {
    CHECK(error_of({"--stat-dir", "x"}) ==
          "unknown option \"--stat-dir\" (did you mean --state-dir?); options are --state-dir, --all, --env, --help");
    CHECK(error_of({"--bogus"}) == "unknown option \"--bogus\"; options are --state-dir, --all, --env, --help");
    CHECK(error_of({"--hlep"}) ==
          "unknown option \"--hlep\" (did you mean --help?); options are --state-dir, --all, --env, --help");
    CHECK(error_of({"--al=1"}) ==
          "unknown option \"--al=1\" (did you mean --all?); options are --state-dir, --all, --env, --help");
    CHECK(error_of({"--state-dir"}) == "--state-dir: missing value; see `corral ps --help`");
    CHECK(error_of({"--all=yes"}) == "--all: takes no value, got \"yes\"");
    CHECK(error_of({"--state-dir", "/a", "--state-dir=/b"}) == "--state-dir: given twice; give it once");
    CHECK(error_of({"-a", "--all"}) == "--all: given twice; give it once");
}

TEST_CASE("a habit's answer replaces the unknown-option line") {
    CommandSyntax s{"corral run", 0, [](std::string_view flag) {
                        return flag == "-v" ? std::string("no -v; use --bind") : std::string();
                    }};
    CHECK(error_of({"-v=x"}, s) == "no -v; use --bind");
    CHECK(error_of({"-v", "x"}, s) == "no -v; use --bind");
    CHECK(error_of({"-w"}, s).starts_with("unknown option \"-w\""));
}

TEST_CASE("a store's own error passes through") {
    const Option<Args> table[] = {
        {{"--n", "N", "a number"}, [](Args&, const std::string& v) { throw UsageError("--n: bad \"" + v + "\""); }}};
    Argv a({"--n", "x"});
    Args args;
    CHECK_THROWS_WITH_AS(parse_options<Args>({"corral t"}, table, a.argc(), a.argv(), args), "--n: bad \"x\"",
                         UsageError);
}

TEST_CASE("help rows: the short alias, the placeholder, the lines in a column, --help last") {
    const auto specs = option_specs<Args>(kTable);
    CHECK(options_help(specs) ==
          "  --state-dir DIR        where the runs are\n"
          "  -a, --all              every run,\n"
          "                         not only running ones\n"
          "  --env K=V              an entry (repeatable)\n"
          "  -h, --help             show this text.\n");
    std::string one;
    append_option_help(one, {"--a-very-long-option-name", "PLACEHOLDER", "x"}, 10);
    CHECK(one == "  --a-very-long-option-name PLACEHOLDER x\n");
    CHECK(find_option_spec(specs, "-a") == &specs[1]);
    CHECK(find_option_spec(specs, "--all") == &specs[1]);
    CHECK(find_option_spec(specs, "-h") == nullptr);
    CHECK(find_option_spec(specs, "") == nullptr);
}

TEST_CASE("option_specs_of: the table's rows in order, made once and kept") {
    const std::span<const OptionSpec> specs = option_specs_of<kTable>();
    REQUIRE(specs.size() == std::size(kTable));
    for (std::size_t i = 0; i < specs.size(); ++i) {
        CHECK(specs[i].name == kTable[i].spec.name);
        CHECK(specs[i].placeholder == kTable[i].spec.placeholder);
        CHECK(specs[i].help == kTable[i].spec.help);
        CHECK(specs[i].short_name == kTable[i].spec.short_name);
        CHECK(specs[i].repeatable == kTable[i].spec.repeatable);
    }
    CHECK(option_specs_of<kTable>().data() == specs.data());  // the same rows, not a copy
}
