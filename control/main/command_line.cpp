#include "control/main/command_line.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "control/cli/commands.h"
#include "control/cli/watch.h"
#include "control/cli/xdp_cli.h"
#include "control/common/listen_address.h"
#include "control/daemon/daemon.h"
#include "control/main/usage.h"
#include "dataplane/api/nic_stats.h"
#include "dataplane/api/numbers.h"
#include "dataplane/api/prefix.h"

namespace floodgate {

namespace {

// Help (-h, --help or the word help, anywhere) or the version asked for: nothing else is done.
struct HelpAsked {};
struct VersionAsked {};

// floodctl's command line in CLI11: the global options, then a command (a subcommand, some
// with subcommands of their own: rules, block, allow, xdp) with its options and arguments,
// the global options accepted after it too. Whatever a command does not take is left over by
// CLI11 (allow_extras) and refused by the command, in its own words, with its usage.
class CommandLine {
  public:
    CommandLine();
    int run(int argc, char **argv);

  private:
    // One command: how it refuses an argument it does not take, and an option the line ends
    // without a value for; and what it does with what it was given. Each returns the exit code.
    struct Node {
        std::function<int(const std::string &arg)> unexpected;
        std::function<int(const std::string &option)> no_value;
        std::function<int(const std::vector<std::string> &extras)> run;
    };
    // A value refused while it was read (watch's and top's numbers), reported after what the
    // line held before it that the command does not take: extras_before counts those.
    struct Pending {
        std::string command, message;
        size_t extras_before;
    };

    CLI::App *add(CLI::App *parent, const std::string &name, Node node);
    void add_globals(CLI::App *app);
    // A value checked as it is read; check returns why it is refused, or nothing.
    void checked(CLI::App *app, const std::string &names, const std::string &command,
                 std::function<std::optional<std::string>(const std::string &)> check);
    void add_daemon();
    void add_watch();
    void add_rules();
    void add_stats_and_top();
    void add_overrides(const std::string &list);
    void add_rule();
    void add_xdp();
    int xdp_malformed(const std::string &sub);

    // After the line is read, and after it ended where a value was due.
    int dispatch();
    int missing_value(const std::string &option);
    // The commands given, the root first.
    std::vector<CLI::App *> chain();
    bool help_asked();
    static std::vector<std::string> extras(const CLI::App *app);
    // What the command does not take, or the pending refusal, whichever came first; nothing.
    std::optional<int> refuse(const Node &node, const std::vector<std::string> &extras) const;

    CLI::App app_{"floodctl"};
    CLI::App *help_ = nullptr;
    std::map<const CLI::App *, Node> nodes_;
    std::optional<Pending> pending_;

    Ctl ctl_{kDefaultDaemonSocket};
    DaemonOptions daemon_;
    std::string redis_user_, redis_password_file_, cluster_key_file_;  // into daemon_.store_auth
    StoreTlsFiles redis_tls_;
    WatchOptions watch_;
    std::string rule_;  // stats, top --rule
    unsigned top_ = 10;
    bool top_dst_ = false;  // top --dst: destinations, not refused sources
    std::string file_;      // rules check, load
    bool dry_run_ = false;
    std::string prefix_;              // block, allow add, del
    std::optional<std::string> ttl_;  // block, allow add
    std::string name_, mode_;         // rule
    XdpArgs xdp_;
};

CommandLine::CommandLine() {
    app_.set_help_flag();  // -h and --help are global options (add_globals), read in order
    app_.formatter_fn([](const CLI::App *, const std::string &, CLI::AppFormatMode) {
        return usage_text();  // CLI11's help is floodctl's usage
    });
    app_.allow_extras();
    app_.require_subcommand(0, 1);  // so that a later word is never read as another command
    app_.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    add_globals(&app_);
    nodes_[&app_] = Node{
        [](const std::string &arg) { return usage_error("", "unknown command '" + arg + "'"); },
        [](const std::string &option) { return usage_error("", option + " needs a value"); },
        [](const std::vector<std::string> &x) {
            return usage_error("", x.empty() ? "no command" : "unknown command '" + x[0] + "'");
        }};
    add_daemon();
    const auto takes_nothing = [](const std::string &) {
        return usage_error("status", "status takes no arguments");
    };
    add(&app_, "status",
        {takes_nothing, takes_nothing, [this, takes_nothing](const std::vector<std::string> &x) {
             return x.empty() ? cmd_status(ctl_) : takes_nothing(x[0]);
         }});
    add_watch();
    add_rules();
    add_stats_and_top();
    const auto nic_takes_nothing = [](const std::string &) {
        return usage_error("nic", "nic takes no arguments");
    };
    add(&app_, "nic",
        {nic_takes_nothing, nic_takes_nothing,
         [this, nic_takes_nothing](const std::vector<std::string> &x) {
             return x.empty() ? cmd_nic(ctl_) : nic_takes_nothing(x[0]);
         }});
    add_overrides("block");
    add_overrides("allow");
    add_rule();
    add_xdp();
    const auto help = [](const auto &) -> int { throw HelpAsked{}; };
    help_ = add(&app_, "help", {help, help, help});
}

CLI::App *CommandLine::add(CLI::App *parent, const std::string &name, Node node) {
    CLI::App *app = parent->add_subcommand(name);
    app->set_help_flag();
    app->allow_extras();
    add_globals(app);
    nodes_[app] = std::move(node);
    return app;
}

void CommandLine::add_globals(CLI::App *app) {
    app->add_option_function<std::string>("--socket",
                                          [this](const std::string &path) { ctl_.socket = path; })
        ->trigger_on_parse();
    app->add_flag_callback("-j,--json", [this] { ctl_.json_out = true; })->trigger_on_parse();
    app->add_flag_callback("-h,--help", [] { throw HelpAsked{}; })->trigger_on_parse();
    app->add_flag_callback("--version", [] { throw VersionAsked{}; })->trigger_on_parse();
}

void CommandLine::checked(CLI::App *app, const std::string &names, const std::string &command,
                          std::function<std::optional<std::string>(const std::string &)> check) {
    app->add_option_function<std::string>(
           names,
           [this, app, command, check = std::move(check)](const std::string &value) {
               if (pending_) return;  // the first refusal is the one reported
               if (std::optional<std::string> why = check(value))
                   pending_ = Pending{command, *why, extras(app).size()};
           })
        ->trigger_on_parse();
}

std::optional<int> CommandLine::refuse(const Node &node,
                                       const std::vector<std::string> &extras) const {
    if (!extras.empty() && (!pending_ || pending_->extras_before > 0))
        return node.unexpected(extras[0]);
    if (pending_) return usage_error(pending_->command, pending_->message);
    return std::nullopt;
}

void CommandLine::add_daemon() {
    const auto unknown = [](const std::string &arg) {
        return usage_error("daemon", "daemon: unknown option " + arg);
    };
    const auto no_value = [](const std::string &option) {
        return usage_error("daemon", "daemon: " + option + " needs a value");
    };
    CLI::App *app = add(&app_, "daemon", {unknown, no_value, {}});
    app->add_option("--config", daemon_.config);
    app->add_option("--dataplane", daemon_.dataplane);
    app->add_option("--metrics", daemon_.metrics);
    app->add_option("--web-config-file", daemon_.web_config_file);
    app->add_option("--nic-top-rules", daemon_.nic_top_rules)->check(CLI::Range(1u, kNicTopRules));
    app->add_option("--box", daemon_.box);
    app->add_option("--redis", daemon_.redis);
    app->add_option("--redis-user", redis_user_);
    app->add_option("--redis-password-file", redis_password_file_);
    app->add_option("--cluster-key-file", cluster_key_file_);
    app->add_option("--redis-tls-ca", redis_tls_.ca);
    app->add_option("--redis-tls-name", redis_tls_.name);
    app->add_option("--redis-tls-cert", redis_tls_.cert);
    app->add_option("--redis-tls-key", redis_tls_.key);
    app->add_option("--flowspec", daemon_.flowspec);
    app->add_option("--flowspec-max", daemon_.flowspec_max)->check(CLI::Range(1, 2000));
    app->add_option("--flowspec-rate", daemon_.flowspec_rate)->check(CLI::Range(0.1, 1000.0));
    app->add_flag("--rtbh", daemon_.rtbh);
    app->add_option("--flowspec-min-source4", daemon_.flowspec_min_source4)
        ->check(CLI::Range(0, 32));
    app->add_option("--flowspec-min-source6", daemon_.flowspec_min_source6)
        ->check(CLI::Range(0, 128));
    checked(app, "--flowspec-never-block", "daemon",
            [this](const std::string &v) -> std::optional<std::string> {
                std::string why;
                const std::optional<Prefix> p = parse_prefix(v, &why);
                if (!p) return "daemon: --flowspec-never-block " + v + ": " + why;
                daemon_.flowspec_never_block.push_back(*p);
                return std::nullopt;
            });
    nodes_[app].run = [this, unknown](const std::vector<std::string> &x) {
        if (!x.empty()) return unknown(x[0]);
        if (pending_) return usage_error(pending_->command, pending_->message);
        // Refused here, before the daemon starts anything, like every other bad value.
        if (daemon_.metrics != "none") {
            ListenAddress address;
            std::string why;
            if (!resolve_listen_address(daemon_.metrics, &address, &why))
                return usage_error("daemon", "daemon: --metrics " + why);
        }
        std::string why;
        const std::optional<StoreAuth> auth =
            load_store_auth(redis_user_, redis_password_file_, redis_tls_, &why, cluster_key_file_);
        if (!auth) return usage_error("daemon", "daemon: " + why);
        DaemonOptions o = daemon_;
        o.socket = ctl_.socket;
        o.store_auth = *auth;
        return run_daemon(o);
    };
}

void CommandLine::add_watch() {
    const auto unknown = [](const std::string &arg) {
        return usage_error("watch", "watch: unknown option " + arg);
    };
    Node node{unknown,
              [](const std::string &option) {
                  return usage_error("watch", "watch: " + option + " needs a value");
              },
              {}};
    node.run = [this, node](const std::vector<std::string> &x) {
        if (std::optional<int> refused = refuse(node, x)) return *refused;
        WatchOptions o = watch_;
        o.socket = ctl_.socket;
        o.json_out = ctl_.json_out;
        return run_watch(o);
    };
    CLI::App *app = add(&app_, "watch", node);
    checked(app, "--interval", "watch", [this](const std::string &v) -> std::optional<std::string> {
        std::string why;
        const std::optional<uint64_t> ns =
            parse_seconds_ns(v, 100000000, 3600 * 1000000000ull, &why);
        if (!ns) return "watch: --interval " + why;
        watch_.interval_s = static_cast<double>(*ns) / 1e9;
        return std::nullopt;
    });
    app->add_option("--rule", watch_.rule);
    checked(app, "-n", "watch", [this](const std::string &v) -> std::optional<std::string> {
        std::string why;
        const std::optional<uint64_t> n = parse_uint(v, 0, 64, &why);
        if (!n) return "watch: -n " + why;
        watch_.top = static_cast<unsigned>(*n);
        return std::nullopt;
    });
    checked(app, "--count", "watch", [this](const std::string &v) -> std::optional<std::string> {
        std::string why;
        const std::optional<uint64_t> n = parse_uint(v, 1, 1000000, &why);
        if (!n) return "watch: --count " + why;
        watch_.count = static_cast<unsigned>(*n);
        return std::nullopt;
    });
}

void CommandLine::add_rules() {
    const auto wrong = [](const std::string &verb) {
        return [verb](const std::string &) {
            return usage_error("rules", "rules " + verb + ": wrong arguments");
        };
    };
    const auto not_a_verb = [](const std::string &arg) {
        return usage_error("rules", "rules " + arg + ": wrong arguments");
    };
    CLI::App *rules = add(&app_, "rules",
                          {not_a_verb, not_a_verb, [not_a_verb](const std::vector<std::string> &x) {
                               if (!x.empty()) return not_a_verb(x[0]);
                               return usage_error("rules", "rules: check, load or show?");
                           }});
    rules->require_subcommand(0, 1);

    CLI::App *check = add(rules, "check", {wrong("check"), wrong("check"), {}});
    CLI::Option *check_file = check->add_option("FILE", file_);
    nodes_[check].run = [this, check_file, wrong](const std::vector<std::string> &x) {
        if (!x.empty() || check_file->count() == 0) return wrong("check")("");
        return cmd_rules_check(ctl_, file_);
    };

    const auto unexpected = [](const std::string &arg) {
        return usage_error("rules", "rules load: unexpected argument '" + arg + "'");
    };
    CLI::App *load = add(rules, "load", {unexpected, unexpected, {}});
    CLI::Option *load_file = load->add_option("FILE", file_);
    load->add_flag("--dry-run", dry_run_);
    nodes_[load].run = [this, load_file, unexpected, wrong](const std::vector<std::string> &x) {
        if (load_file->count() == 0) return wrong("load")("");
        if (!x.empty()) return unexpected(x[0]);
        return cmd_rules_load(ctl_, file_, dry_run_);
    };

    add(rules, "show",
        {wrong("show"), wrong("show"), [this, wrong](const std::vector<std::string> &x) {
             return x.empty() ? cmd_rules_show(ctl_) : wrong("show")(x[0]);
         }});
}

void CommandLine::add_stats_and_top() {
    const auto wrong = [](const std::string &) {
        return usage_error("stats", "stats: wrong arguments");
    };
    CLI::App *stats =
        add(&app_, "stats", {wrong, wrong, [this, wrong](const std::vector<std::string> &x) {
                                 return x.empty() ? cmd_stats(ctl_, rule_) : wrong(x[0]);
                             }});
    stats->add_option("--rule", rule_);

    const auto unexpected = [](const std::string &arg) {
        return usage_error("top", "top: unexpected argument '" + arg + "'");
    };
    Node node{unexpected, unexpected, {}};
    node.run = [this, node](const std::vector<std::string> &x) {
        if (std::optional<int> refused = refuse(node, x)) return *refused;
        return top_dst_ ? cmd_top_destinations(ctl_, rule_, static_cast<int>(top_))
                        : cmd_top(ctl_, rule_, static_cast<int>(top_));
    };
    CLI::App *top = add(&app_, "top", node);
    top->add_option("--rule", rule_);
    top->add_flag("--dst", top_dst_);
    checked(top, "-n", "top", [this](const std::string &v) -> std::optional<std::string> {
        std::string why;
        const std::optional<uint64_t> n = parse_uint(v, 1, 64, &why);
        if (!n) return "top: -n " + why;
        top_ = static_cast<unsigned>(*n);
        return std::nullopt;
    });
}

void CommandLine::add_overrides(const std::string &list) {
    const auto not_a_verb = [list](const std::string &arg) {
        return usage_error(list, list + ": '" + arg + "' is not add, del or list");
    };
    CLI::App *parent =
        add(&app_, list,
            {not_a_verb, not_a_verb, [list, not_a_verb](const std::vector<std::string> &x) {
                 if (!x.empty()) return not_a_verb(x[0]);
                 return usage_error(list, list + ": add, del or list?");
             }});
    parent->require_subcommand(0, 1);

    const auto takes_nothing = [list](const std::string &) {
        return usage_error(list, list + " list takes no arguments");
    };
    add(parent, "list",
        {takes_nothing, takes_nothing,
         [this, list, takes_nothing](const std::vector<std::string> &x) {
             return x.empty() ? cmd_override_list(ctl_, list) : takes_nothing(x[0]);
         }});

    for (const std::string verb : {"add", "del"}) {
        const auto unexpected = [list, verb](const std::string &arg) {
            return usage_error(list, list + " " + verb + ": unexpected argument '" + arg + "'");
        };
        const auto no_value = [list, unexpected](const std::string &option) {
            return option == "--ttl" ? usage_error(list, "--ttl needs a DURATION")
                                     : unexpected(option);
        };
        CLI::App *app = add(parent, verb, {unexpected, no_value, {}});
        CLI::Option *prefix = app->add_option("PREFIX", prefix_);
        if (verb == "add")
            app->add_option_function<std::string>("--ttl",
                                                  [this](const std::string &v) { ttl_ = v; });
        nodes_[app].run = [this, list, verb, prefix,
                           unexpected](const std::vector<std::string> &x) {
            if (prefix->count() == 0)
                return usage_error(list, list + " " + verb + " needs a PREFIX");
            // Checked here, so that the error names what was typed, not the protocol's field.
            std::string why;
            if (!parse_prefix(prefix_, &why))
                return usage_error(list, list + " " + verb + " " + prefix_ + ": " + why);
            if (!x.empty()) return unexpected(x[0]);
            std::optional<long long> ttl_s;
            if (ttl_) {
                ttl_s = parse_duration_s(*ttl_, &why);
                if (!ttl_s) return usage_error(list, "--ttl " + why);
            }
            return cmd_override(ctl_, list, verb, prefix_, ttl_s);
        };
    }
}

void CommandLine::add_rule() {
    const auto wrong = [](const std::string &) {
        return usage_error("rule", "rule: NAME and a mode");
    };
    CLI::App *app = add(&app_, "rule", {wrong, wrong, {}});
    CLI::Option *name = app->add_option("NAME", name_);
    CLI::Option *mode = app->add_option("MODE", mode_);
    nodes_[app].run = [this, name, mode, wrong](const std::vector<std::string> &x) {
        if (!x.empty() || name->count() == 0 || mode->count() == 0) return wrong("");
        if (mode_ != "shadow" && mode_ != "enforce")
            return usage_error("rule",
                               "rule " + name_ + ": '" + mode_ + "' is not shadow or enforce");
        return cmd_rule_mode(ctl_, name_, mode_);
    };
}

// xdp's refusals are cmd_xdp's own (control/cli/xdp_cli.h): it is told what it was given.
int CommandLine::xdp_malformed(const std::string &sub) {
    XdpArgs a = xdp_;
    a.sub = sub;
    a.well_formed = false;
    return cmd_xdp(a, ctl_.json_out);
}

void CommandLine::add_xdp() {
    const auto not_a_sub = [this](const std::string &arg) { return xdp_malformed(arg); };
    CLI::App *xdp = add(
        &app_, "xdp", {not_a_sub, not_a_sub, [this, not_a_sub](const std::vector<std::string> &x) {
                           if (!x.empty()) return not_a_sub(x[0]);
                           return cmd_xdp(XdpArgs{}, ctl_.json_out);  // no subcommand
                       }});
    xdp->require_subcommand(0, 1);
    for (const std::string sub : {"attach", "detach", "list", "stats", "add", "del"}) {
        const auto malformed = [this, sub](const std::string &) { return xdp_malformed(sub); };
        CLI::App *app = add(xdp, sub, {malformed, malformed, {}});
        CLI::Option *target = nullptr;
        if (sub == "attach" || sub == "detach") target = app->add_option("IFACE", xdp_.target);
        if (sub == "add" || sub == "del") target = app->add_option("PREFIX", xdp_.target);
        if (sub == "attach")
            app->add_option_function<std::string>(
                "--config", [this](const std::string &v) { xdp_.config = v; });
        if (sub == "add")
            app->add_option_function<std::string>("--ttl",
                                                  [this](const std::string &v) { xdp_.ttl = v; });
        nodes_[app].run = [this, sub, target, malformed](const std::vector<std::string> &x) {
            if (!x.empty() || (target != nullptr && target->count() == 0)) return malformed("");
            XdpArgs a = xdp_;
            a.sub = sub;
            a.well_formed = true;
            return cmd_xdp(a, ctl_.json_out);
        };
    }
}

std::vector<std::string> CommandLine::extras(const CLI::App *app) {
    std::vector<std::string> out;
    for (const std::string &arg : app->remaining())
        if (arg != "--") out.push_back(arg);  // CLI11 keeps the end of options with them
    return out;
}

std::vector<CLI::App *> CommandLine::chain() {
    std::vector<CLI::App *> out = {&app_};
    while (!out.back()->get_subcommands().empty()) out.push_back(out.back()->get_subcommands()[0]);
    return out;
}

bool CommandLine::help_asked() {
    for (CLI::App *app : chain()) {
        if (app == help_) return true;
        for (const std::string &arg : app->remaining())
            if (arg == "help") return true;
        for (const CLI::Option *o : app->get_options())
            if (o->get_positional())
                for (const std::string &arg : o->results())
                    if (arg == "help") return true;
    }
    return false;
}

int CommandLine::dispatch() {
    if (help_asked()) throw HelpAsked{};
    const std::vector<CLI::App *> commands = chain();
    // Something a command does not take, before the command it is followed by.
    for (size_t i = 0; i + 1 < commands.size(); ++i)
        if (const std::vector<std::string> x = extras(commands[i]); !x.empty())
            return nodes_.at(commands[i]).unexpected(x[0]);
    return nodes_.at(commands.back()).run(extras(commands.back()));
}

int CommandLine::missing_value(const std::string &option) {
    if (help_asked()) throw HelpAsked{};
    if (option == "--socket") return usage_error("", "--socket needs a path");
    const std::vector<CLI::App *> commands = chain();
    for (CLI::App *app : commands) {
        const Node &node = nodes_.at(app);
        if (app == commands.back()) {
            if (std::optional<int> refused = refuse(node, extras(app))) return *refused;
            return node.no_value(option);
        }
        if (const std::vector<std::string> x = extras(app); !x.empty())
            return node.unexpected(x[0]);
    }
    return 2;  // not reached: the chain ends with the command being read
}

int CommandLine::run(int argc, char **argv) {
    try {
        try {
            app_.parse(argc, argv);
        } catch (const CLI::ArgumentMismatch &) {
            // The line ended where a value was due: its last argument is the option.
            return missing_value(argv[argc - 1]);
        } catch (const CLI::ParseError &e) {
            return usage_error("", e.what());  // not expected of CLI11 with this tree
        }
        try {
            return dispatch();
        } catch (const std::exception &e) {
            std::fprintf(stderr, "floodctl: %s\n", e.what());
            return 1;
        }
    } catch (const HelpAsked &) {
        std::fputs(app_.help().c_str(), stdout);
        return 0;
    } catch (const VersionAsked &) {
        std::printf("floodctl %s\n", FG_VERSION);
        return 0;
    }
}

}  // namespace

int floodctl_main(int argc, char **argv) {
    return CommandLine().run(argc, argv);
}

}  // namespace floodgate
