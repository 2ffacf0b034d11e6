// The rules loader: a rules file's text, or its JSON form from a control message, to a
// validated rules model (dataplane/api/rules.h). Every check refuses the whole file with a
// ConfigError at the first problem, naming the file, the line and the field; nothing is
// returned half-loaded. Bounded in time and memory whatever the input (rules/doc.h).
#pragma once

#include <string>

#include "dataplane/api/rules.h"
#include "dataplane/patterns/payload_database.h"
#include "rules/config_error.h"
#include "rules/doc.h"

namespace floodgate {

// The document's meaning, checked. file names the source in messages. precompiled: payload
// databases the control plane compiled (a load request's), used instead of compiling again.
Config config_from_doc(const DocNode &doc, const std::string &file,
                       const PrecompiledPayloads *precompiled = nullptr);

// A rules file as the two processes hand it on: its text (for people), its document in JSON
// (what the dataplane is sent, and validates again) and what it means.
struct RulesFile {
    std::string name;  // the path as given
    std::string text;
    nlohmann::ordered_json doc;
    Config config;
};
RulesFile parse_rules_file(const std::string &yaml_text, const std::string &name);
RulesFile load_rules_file(const std::string &path);

// YAML text to a Config: yaml_to_doc, then config_from_doc.
Config parse_config(const std::string &yaml_text, const std::string &file_name = "<string>");

// The file's bytes (for parse_config, and for sending them to the dataplane); refuses a file
// that cannot be read or is larger than kMaxDocBytes without reading more of it.
std::string read_config_file(const std::string &path);
Config load_config(const std::string &path);

}  // namespace floodgate
