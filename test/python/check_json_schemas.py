"""JSON Schema coverage under adversarial text (json-schemas.test): a
random-weight model samples at temperature 1.5 under each of the schemas
in SCHEMAS (a JSON list), several seeds each, through generate(...,
json_schema=); every text must be JSON that python3-jsonschema validates
against its schema, formats checked (date, uuid; time and date-time as
RFC 3339 has them). Prints the count and
each failure.

    check_json_schemas.py LIBRARY SCHEMAS SEEDS
"""
import datetime
import json
import re
import sys

import jsonschema

import tfmc


# RFC 3339's full-time, which JSON Schema's "time" is (jsonschema checks it
# only with rfc3339-validator, which Debian lacks; its fallback is draft
# 3's "%H:%M:%S").
TIME = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?"
                  r"(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])", re.IGNORECASE)


def format_checker():
    checker = jsonschema.FormatChecker(formats=("date", "uuid"))

    @checker.checks("time")
    def is_time(value):
        return not isinstance(value, str) or bool(TIME.fullmatch(value))

    @checker.checks("date-time", raises=ValueError)
    def is_date_time(value):
        if not isinstance(value, str):
            return True
        day, _, time = value.partition("T")
        return bool(datetime.date.fromisoformat(day)) and is_time(time)
    return checker


def main():
    library, path, seeds = sys.argv[1], sys.argv[2], int(sys.argv[3])
    schemas = json.load(open(path, encoding="utf-8"))
    m = tfmc.load(library)
    checker = format_checker()
    valid = total = 0
    for index, schema in enumerate(schemas):
        for seed in range(seeds):
            total += 1
            text = m.generate("Once upon a time", max_tokens=500,
                              temperature=1.5, seed=seed, json_schema=schema)
            try:
                jsonschema.validate(json.loads(text), schema,
                                    format_checker=checker)
                valid += 1
            except (ValueError, jsonschema.ValidationError) as e:
                print(f"schema {index} seed {seed}: {text!r}: {e}")
    print(f"valid: {valid} of {total} texts, {len(schemas)} schemas")


if __name__ == "__main__":
    main()
