#!/usr/bin/python3
"""cmp_check.py UP.json CLIENT.json MIN LABEL [none]

Checks two outputs of tests/tools/upstream-sizes for the CLOSE compound
(smbaccel sends a CLOSE with the WRITEs of its flush as one related
compound): UP.json of the proxy -> server leg, CLIENT.json of the
client -> proxy leg of the same run.

Upstream, at least MIN request messages are WRITE(s)+CLOSE chains, each with
the related flag on every element but the first and one explicit FileId
(not the all-FF related one) in every element; as many WRITE(s)+CLOSE
answer chains came back.  On the client leg no answer is compounded at all
(the client sent none), no single answer carries the related flag, and the
client got as many CLOSE answers as it sent CLOSEs.
With "none": no WRITE+CLOSE chain went upstream (close_compound = no).
Prints one line; exit 1 on failure.
"""
import json
import sys

up, cl = (json.load(open(p)) for p in sys.argv[1:3])
want, label = int(sys.argv[3]), sys.argv[4]
none = len(sys.argv) > 5 and sys.argv[5] == "none"


def wc(d):
    """Sum of the counts of WRITE(s)+CLOSE chains in a {chain: n} dict."""
    return sum(n for k, n in d.items()
               if k.endswith("+CLOSE") and set(k.split("+")[:-1]) == {"WRITE"})


u = up["compounds"]
req, rsp = wc(u["requests"]), wc(u["responses"])
rel, exp = wc(u["related_ok"]), wc(u["explicit_fileid"])
c = cl["compounds"]
problems = []
if none:
    if req:
        problems.append("%d WRITE+CLOSE compounds went upstream" % req)
else:
    if req < want:
        problems.append("only %d WRITE+CLOSE compounds upstream, expected >= %d" % (req, want))
    if rel != req:
        problems.append("%d of %d compounds without the related flag on every element but the first"
                        % (req - rel, req))
    if exp != req:
        problems.append("%d of %d compounds without one explicit FileId in every element"
                        % (req - exp, req))
    if rsp != req:
        problems.append("%d WRITE+CLOSE answer chains for %d compounds" % (rsp, req))
if c["responses"]:
    problems.append("compounded answers reached the client: %s" % c["responses"])
if cl.get("alone_related"):
    problems.append("answers with the related flag reached the client: %s" % cl["alone_related"])
creq = cl["requests"].get("CLOSE", 0)
crsp = cl["responses"].get("CLOSE", 0)
if creq != crsp:
    problems.append("the client sent %d CLOSEs and got %d CLOSE answers" % (creq, crsp))
print("%s: upstream %d WRITE+CLOSE compounds (%d related, %d explicit FileIds), %d answered "
      "as compounds; client leg: %d CLOSEs, %d CLOSE answers, compounded answers %s, "
      "related-flag answers %s"
      % (label, req, rel, exp, rsp, creq, crsp, c["responses"] or "none",
         cl.get("alone_related") or "none"))
for p in problems:
    print("  FAIL: " + p)
sys.exit(1 if problems else 0)
