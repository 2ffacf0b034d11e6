// A refused rules file: names the file, the line (1-based, 0 when unknown) and the field path
// (for example "rules[1].limit.rate"), so that an operator can go straight to the mistake.
#pragma once

#include <stdexcept>
#include <string>

namespace floodgate {

class ConfigError : public std::runtime_error {
  public:
    ConfigError(std::string file, int line, std::string field, const std::string &reason);
    const std::string &file() const { return file_; }
    int line() const { return line_; }
    const std::string &field() const { return field_; }

  private:
    std::string file_;
    int line_;
    std::string field_;
};

}  // namespace floodgate
