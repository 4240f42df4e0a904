"""Recomputes an Action's fingerprint from its returned fields with the
`rfc8785` package (an RFC 8785 implementation independent of hds).

stdin: the Action object; stdout: sha256:<hex>.
"""
import hashlib
import json
import sys

import rfc8785

action = json.load(sys.stdin)
keys = ["title", "description", "options", "interaction", "context",
        "decision_class", "decision_context", "controls", "open_url"]
material = {k: action.get(k) for k in keys}
print("sha256:" + hashlib.sha256(rfc8785.dumps(material)).hexdigest())
