// How floodgate's commands read their options (`floodgate run`'s, after the EAL's, and
// `floodgate replay`'s): CLI11, the same way for both, with what getopt_long did before it
// kept as it was.
//
// Each option's value is checked as it is read, in command-line order, so the first mistake
// on the line is the one reported, and the last of a repeated option wins. What a command
// says about its options is its own: its help is the usage text it hands over (CLI11's
// formatter is replaced by it), and a refusal is one line, then that usage, exit code 2:
//   "floodgate replay: --workers takes a whole number from 1 to 64, not '0'" (a value),
//   "replay: unrecognized option '--bogus'", "replay: invalid option -- 'x'",
//   "replay: option '--config' requires an argument", "replay: option requires an argument
//   -- 'c'", "replay: option '--quiet' doesn't allow an argument" (getopt_long's words, under
//   the name the command was run as).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace floodgate {

// A value refused while it is read: the message, without the command's name in front
// ("--spread takes steering, hash or rr, not 'x'").
class UsageError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// "COMMAND: message" on stderr; returns 1, a failure's exit code.
int fail(const std::string &command, const std::string &message);

class CommandLine {
  public:
    // command: how messages name it ("floodgate replay"); usage: its help text.
    CommandLine(std::string command, std::string usage);
    ~CommandLine();
    CommandLine(const CommandLine &) = delete;
    CommandLine &operator=(const CommandLine &) = delete;

    // An option with a value ("--config,-c"), handed to set as it is read; set throws
    // UsageError to refuse it.
    void value(const std::string &names, std::function<void(const std::string &)> set);
    // The value as it is.
    void text(const std::string &names, std::string *to);
    // A whole number in [lo, hi] (api/numbers.h), or "--NAME takes a whole number from lo to
    // hi, not 'x'".
    void number(const std::string &names, uint64_t lo, uint64_t hi,
                std::function<void(uint64_t)> set);
    // An option without a value.
    void flag(const std::string &names, bool *to);

    // Reads argv; argv[0] is the name getopt_long's messages start with. nullopt: go on, with
    // operands() holding the arguments that are not options (after "--" too). Otherwise the
    // exit code: 0 after --help or -h (the usage on stdout), 2 after a refusal.
    std::optional<int> parse(int argc, char **argv);
    const std::vector<std::string> &operands() const { return operands_; }

    // The long names of the options ("--config", ...).
    std::vector<std::string> long_names() const;
    const std::string &usage() const { return usage_; }

    // "COMMAND: message" and the usage on stderr; returns 2, a usage error's exit code.
    int usage_error(const std::string &message) const;
    int fail(const std::string &message) const { return floodgate::fail(command_, message); }

  private:
    // Refuses, in getopt_long's words, the first unknown option read so far: called before
    // each option is taken, so that an unknown one is reported where it stands on the line.
    void refuse_unknown() const;
    std::string name(const std::string &names) const;

    std::string command_;
    std::string usage_;
    std::string program_;            // argv[0] while parsing
    std::unique_ptr<CLI::App> app_;  // CLI11 itself: only options.cpp includes it
    std::vector<std::string> operands_;
};

}  // namespace floodgate
