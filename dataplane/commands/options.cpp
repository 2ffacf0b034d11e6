#include "dataplane/commands/options.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string_view>

#include "dataplane/api/numbers.h"

namespace floodgate {

namespace {

// A refusal worded whole, the command's name or argv[0] in front (getopt_long's messages).
class Refusal : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Help asked for: the usage on stdout.
struct HelpAsked {};

}  // namespace

int fail(const std::string &command, const std::string &message) {
    std::fprintf(stderr, "%s: %s\n", command.c_str(), message.c_str());
    return 1;
}

CommandLine::CommandLine(std::string command, std::string usage)
    : command_(std::move(command)),
      usage_(std::move(usage)),
      app_(std::make_unique<CLI::App>(command_)) {
    app_->set_help_flag();  // -h and --help below: a flag like the others, read in order
    app_->formatter_fn(
        [this](const CLI::App *, const std::string &, CLI::AppFormatMode) { return usage_; });
    // Unknown options are refused by refuse_unknown(), in getopt_long's words.
    app_->allow_extras();
    app_->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    app_->add_option("operands", operands_);
    app_->add_flag_callback("-h,--help",
                            [this] {
                                refuse_unknown();
                                throw HelpAsked{};
                            })
        ->trigger_on_parse()
        ->disable_flag_override();
}

CommandLine::~CommandLine() = default;

void CommandLine::value(const std::string &names, std::function<void(const std::string &)> set) {
    app_->add_option_function<std::string>(names,
                                           [this, set = std::move(set)](const std::string &v) {
                                               refuse_unknown();
                                               set(v);
                                           })
        ->trigger_on_parse();
}

void CommandLine::text(const std::string &names, std::string *to) {
    value(names, [to](const std::string &v) { *to = v; });
}

void CommandLine::number(const std::string &names, uint64_t lo, uint64_t hi,
                         std::function<void(uint64_t)> set) {
    value(names, [option = name(names), lo, hi, set = std::move(set)](const std::string &v) {
        std::string why;
        const std::optional<uint64_t> n = parse_uint(v, lo, hi, &why);
        if (!n) throw UsageError(option + " " + why);
        set(*n);
    });
}

void CommandLine::flag(const std::string &names, bool *to) {
    app_->add_flag_callback(names,
                            [this, to] {
                                refuse_unknown();
                                *to = true;
                            })
        ->trigger_on_parse()
        ->disable_flag_override();
}

std::string CommandLine::name(const std::string &names) const {
    for (const std::string &n : CLI::detail::split(names, ','))
        if (n.starts_with("--")) return n;
    return names;
}

std::vector<std::string> CommandLine::long_names() const {
    std::vector<std::string> out;
    for (const CLI::Option *o : app_->get_options())
        for (const std::string &n : o->get_lnames())
            if (n != "help") out.push_back("--" + n);
    return out;
}

void CommandLine::refuse_unknown() const {
    for (const std::string &arg : app_->remaining()) {
        if (arg == "--") continue;  // the end of the options, kept by CLI11 with the unknown ones
        if (arg.starts_with("--")) throw Refusal(program_ + ": unrecognized option '" + arg + "'");
        throw Refusal(program_ + ": invalid option -- '" + arg.substr(1, 1) + "'");
    }
}

std::optional<int> CommandLine::parse(int argc, char **argv) {
    program_ = argc > 0 ? argv[0] : command_;
    operands_.clear();
    try {
        try {
            app_->parse(argc, argv);
            refuse_unknown();
            return std::nullopt;
        } catch (const CLI::ArgumentMismatch &) {
            refuse_unknown();  // one that came before is the one getopt_long reported
            // A flag given a value (--quiet=1): the first such argument, since each is
            // refused as soon as it is read.
            for (int i = 1; i < argc; ++i) {
                const std::string_view a = argv[i];
                if (a == "--") break;
                const size_t eq = a.find('=');
                if (!a.starts_with("--") || eq == std::string_view::npos) continue;
                const CLI::Option *o = app_->get_option_no_throw(std::string(a.substr(0, eq)));
                if (o != nullptr && o->get_expected_max() == 0)
                    throw Refusal(program_ + ": option '" + std::string(a.substr(0, eq)) +
                                  "' doesn't allow an argument");
            }
            // Else the line ended where an option's value should have been.
            const std::string last = argv[argc - 1];
            if (last.starts_with("--"))
                throw Refusal(program_ + ": option '" + last + "' requires an argument");
            throw Refusal(program_ + ": option requires an argument -- '" +
                          last.substr(last.size() - 1) + "'");
        }
    } catch (const HelpAsked &) {
        std::fputs(app_->help().c_str(), stdout);  // the usage: formatter_fn above
        return 0;
    } catch (const UsageError &e) {
        return usage_error(e.what());
    } catch (const Refusal &e) {
        std::fprintf(stderr, "%s\n%s", e.what(), usage_.c_str());
        return 2;
    } catch (const CLI::ParseError &e) {
        // Nothing else is expected of CLI11 here; said in its words all the same.
        return usage_error(e.what());
    }
}

int CommandLine::usage_error(const std::string &message) const {
    std::fprintf(stderr, "%s: %s\n%s", command_.c_str(), message.c_str(), usage_.c_str());
    return 2;
}

}  // namespace floodgate
