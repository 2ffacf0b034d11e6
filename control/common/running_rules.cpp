#include "control/common/running_rules.h"

#include "rules/load.h"

namespace floodgate {

Config running_rules(const nlohmann::json &r) {
    const std::string source = r.value("source", "");
    Config c = config_from_doc(json_to_doc(r.value("doc", nlohmann::json()), source), source);
    const nlohmann::json modes = r.value("modes", nlohmann::json::object());
    for (Rule &rule : c.rules)
        if (modes.contains(rule.name))
            rule.mode = modes[rule.name] == "shadow" ? RuleMode::shadow : RuleMode::enforce;
    // The document has no lines; the text it came from has them.
    try {
        const Config from_text = parse_config(r.value("text", ""), source);
        for (Rule &rule : c.rules)
            for (const Rule &t : from_text.rules)
                if (t.name == rule.name) rule.line = t.line;
    } catch (const ConfigError &) {
        // a text that does not parse here (another version's file): no lines
    }
    return c;
}

}  // namespace floodgate
