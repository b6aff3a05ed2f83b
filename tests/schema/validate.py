#!/usr/bin/env python3
"""Validates dtplan's JSON documents against docs/spec/dtplan.schema.json.

usage: validate.py SCHEMA [--expect-invalid] DOCUMENT...

Every DOCUMENT must be valid (or, with --expect-invalid, every one must be
invalid). Prints each failure with its place in the document; exits 1 on
any. Uses python3-jsonschema (Debian), Draft 2020-12.
"""
import json
import sys

try:
    import jsonschema
except ImportError:
    print("validate.py: python3-jsonschema is not installed (scripts/deps.sh installs it)", file=sys.stderr)
    sys.exit(2)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    expect_invalid = argv[2] == "--expect-invalid"
    documents = argv[3:] if expect_invalid else argv[2:]
    failures = 0
    for path in documents:
        with open(path) as f:
            document = json.load(f)
        errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
        if expect_invalid and not errors:
            print(f"{path}: valid, but it should not be", file=sys.stderr)
            failures += 1
        elif not expect_invalid:
            for e in errors:
                where = "/".join(str(p) for p in e.absolute_path) or "(the document)"
                print(f"{path}: {where}: {e.message}", file=sys.stderr)
            failures += 1 if errors else 0
    print(f"{len(documents) - failures} of {len(documents)} documents {'invalid' if expect_invalid else 'valid'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
