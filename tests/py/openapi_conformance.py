"""Checks every JSON response the API tests received against /v1/openapi.json.

The Rust API tests record each response they get (tests/api/helpers.rs, when
HDS_RECORD_RESPONSES names a directory) as JSON lines: method, path, status,
body. This script finds each response's operation in the OpenAPI document
and checks that

- the status is one the operation declares, and
- a JSON body validates against the schema declared for that status, with no
  member the schema does not name (`unevaluatedProperties: false` is added to
  every object schema that says nothing about other members).

A generated client trusts exactly these. Prints one line per distinct
problem (with how often it was seen and one example) and exits 1 when there
is any. Usage: openapi_conformance.py OPENAPI_URL_OR_FILE RESPONSES_DIR
"""

import copy
import glob
import json
import re
import sys
import urllib.request

import jsonschema_rs


def load_doc(where):
    if where.startswith("http://") or where.startswith("https://"):
        with urllib.request.urlopen(where, timeout=30) as r:
            return json.load(r)
    with open(where) as f:
        return json.load(f)


OPEN = "__open"


def strict(schema, in_all_of=False):
    """`schema` with `unevaluatedProperties: false` on every object schema
    that leaves other members open, except on an allOf member, which cannot
    see its siblings' members: the allOf's parent gets it instead, and a
    member that is a reference points at the open copy of that component
    (see `components`)."""
    if isinstance(schema, list):
        return [strict(s, in_all_of) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for k, v in schema.items():
        if k == "allOf":
            out[k] = [strict(s, True) for s in v]
        elif k in ("properties", "$defs", "patternProperties"):
            out[k] = {name: strict(s) for name, s in v.items()}
        elif k in ("example", "examples", "default", "enum", "const"):
            out[k] = v
        elif k == "$ref" and in_all_of:
            out[k] = v + OPEN
        else:
            out[k] = strict(v)
    open_ended = "additionalProperties" not in schema and "unevaluatedProperties" not in schema
    if open_ended and not in_all_of and ("properties" in schema or "allOf" in schema):
        out["unevaluatedProperties"] = False
    return out


def components(doc):
    """The document's schemas made strict, each also as `<name>__open`
    without the top-level rule, for allOf members to refer to."""
    schemas = doc.get("components", {}).get("schemas", {})
    out = {}
    for name, schema in schemas.items():
        out[name] = strict(schema)
        out[name + OPEN] = strict(schema, in_all_of=True)
    return {"schemas": out}


def operations(doc):
    """[(regex, template, method, operation)], literal paths before templated
    ones so that /v1/actions/batch is not read as /v1/actions/{id}."""
    ops = []
    for template, item in doc["paths"].items():
        pattern = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
        for method, op in item.items():
            if method in ("get", "post", "put", "patch", "delete", "head", "options"):
                ops.append((re.compile(pattern), template, method.upper(), op))
    ops.sort(key=lambda o: o[1].count("{"))
    return ops


def main():
    doc = load_doc(sys.argv[1])
    comps = components(doc)
    ops = operations(doc)
    validators = {}
    problems = {}
    checked = 0
    operations_seen = set()

    def problem(key, example):
        n, first = problems.get(key, (0, example))
        problems[key] = (n + 1, first)

    files = glob.glob(sys.argv[2] + "/*.jsonl")
    for name in files:
        with open(name) as f:
            for line in f:
                rec = json.loads(line)
                path = rec["path"].split("?", 1)[0]
                if not path.startswith("/v1/"):
                    continue
                match = next(
                    (o for o in ops if o[2] == rec["method"] and o[0].match(path)), None
                )
                if match is None:
                    continue  # a path or method the API does not have (a 404/405 test)
                _, template, method, op = match
                operations_seen.add((method, template))
                status = str(rec["status"])
                responses = op.get("responses", {})
                declared = responses.get(status) or responses.get(status[0] + "XX") or responses.get("default")
                what = f"{method} {template} {status}"
                if status == "500":
                    continue  # tests that break the database on purpose
                if declared is None:
                    problem((what, "status not declared"), rec["path"])
                    continue
                if rec["body"] is None or not rec.get("json"):
                    continue
                schema = declared.get("content", {}).get("application/json", {}).get("schema")
                if schema is None:
                    problem((what, "JSON body, but no JSON schema declared"), rec["path"])
                    continue
                checked += 1
                key = (method, template, status)
                if key not in validators:
                    root = dict(strict(copy.deepcopy(schema)))
                    root["components"] = comps
                    validators[key] = jsonschema_rs.Draft202012Validator(root)
                for e in validators[key].iter_errors(rec["body"]):
                    where = "/" + "/".join(str(p) for p in e.instance_path)
                    # Array indexes vary; the shape of the problem does not.
                    shape = re.sub(r"/\d+", "/N", where)
                    message = re.sub(r"\s+", " ", e.message)
                    if message.startswith(("{", "[")) or len(message) > 200:
                        # oneOf/anyOf failures quote the whole instance.
                        kind = type(e.kind).__name__
                        schema_at = "/".join(str(p) for p in e.schema_path)
                        message = f"{kind} at schema {schema_at}: {message[:120]}..."
                    problem((what, f"at {shape}: {message}"), rec["path"])

    print(
        f"openapi conformance: {checked} JSON bodies checked across "
        f"{len(operations_seen)} operations; {len(problems)} distinct problems"
    )
    for (what, why), (n, example) in sorted(problems.items()):
        print(f"  {what}: {why} ({n}x, e.g. {example})")
    if checked == 0:
        print("  no recorded JSON response was found: the recording is broken")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
