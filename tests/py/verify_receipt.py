"""Verifies hds receipts with PyJWT, an implementation independent of hds.

stdin: {"jwks": <JWKS>, "receipts": [<compact JWS>, ...]}
stdout: one JSON line per receipt with its verified claims; exit 1 on any failure.
"""
import json
import sys

import jwt  # PyJWT

data = json.load(sys.stdin)
keys = {k["kid"]: jwt.PyJWK(k) for k in data["jwks"]["keys"]}
for token in data["receipts"]:
    header = jwt.get_unverified_header(token)
    assert header["alg"] == "EdDSA" and header["typ"] == "hds-receipt+jwt", header
    claims = jwt.decode(token, keys[header["kid"]].key, algorithms=["EdDSA"], options={"verify_aud": False})
    print(json.dumps({"kid": header["kid"], "sub": claims["sub"], "seq": claims["seq"], "prev": claims["prev"],
                      # present only on receipts of Actions requested on behalf of someone
                      "requested_by": claims.get("requested_by")}))
