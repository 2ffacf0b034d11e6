#!/usr/bin/env python3
"""A text file as a C++ header, for a program that carries it (the cluster store's Lua script).

  embed_text.py NAME INPUT OUTPUT

OUTPUT declares `inline constexpr const char NAME[]`, INPUT's bytes exactly, as a raw string
literal, so the file stays the one place the text is written and read (a Lua file that Lua
tools and the perf harness read as it is).
"""
import os
import sys

DELIMITER = "text"


def main():
    name, source, output = sys.argv[1:4]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    if ")" + DELIMITER + '"' in text:
        sys.exit(f"{source}: holds ){DELIMITER}\", which would end the raw string early")
    header = (f"// {os.path.basename(source)} as text, made by scripts/embed_text.py.\n"
              "#pragma once\n\n"
              f'inline constexpr const char {name}[] = R"{DELIMITER}({text}){DELIMITER}";\n')
    with open(output, "w", encoding="utf-8") as f:
        f.write(header)
    return 0


if __name__ == "__main__":
    sys.exit(main())
