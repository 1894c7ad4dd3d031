#!/usr/bin/python3
"""addc_account.py - edit an account of the test DC's database directly
(for tests/integration/addc_lib.sh; run inside its private mount
namespace, with the DC's smb.conf).

    addc_account.py SMB_CONF ACCOUNT enctypes VALUE
        msDS-SupportedEncryptionTypes := VALUE ("" removes it)
    addc_account.py SMB_CONF ACCOUNT rc4-only
        drop the Primary:Kerberos-Newer-Keys package (the AES keys) from
        supplementalCredentials and its name from the Packages list, with
        the password_hash module's bypass control (it accepts a blob
        without that package, not one with fewer keys in it)

    addc_account.py SMB_CONF ACCOUNT groups N
        create the global security groups ACCOUNT-g0 .. ACCOUNT-g(N-1)
        that do not exist yet, with ACCOUNT a member of each (a large PAC
        in its tickets, as a user in many groups of a Windows domain has)

ACCOUNT is a sAMAccountName (e.g. DC1$).
"""
import binascii
import sys

import ldb
from samba import dsdb
from samba.auth import system_session
from samba.dcerpc import drsblobs
from samba.ndr import ndr_pack, ndr_unpack
from samba.param import LoadParm
from samba.samdb import SamDB

NEWER = "Kerberos-Newer-Keys"


def find(db, name, attrs):
    res = db.search(base=db.domain_dn(), scope=ldb.SCOPE_SUBTREE,
                    expression="(sAMAccountName=%s)" % ldb.binary_encode(name),
                    attrs=attrs)
    if len(res) != 1:
        sys.exit("no account " + name)
    return res[0]


def enctypes(db, acct, value):
    m = ldb.Message()
    m.dn = find(db, acct, ["dn"]).dn
    attr = "msDS-SupportedEncryptionTypes"
    if value:
        m[attr] = ldb.MessageElement(value, ldb.FLAG_MOD_REPLACE, attr)
    else:
        m[attr] = ldb.MessageElement([], ldb.FLAG_MOD_DELETE, attr)
    db.modify(m)


def rc4_only(db, acct):
    r = find(db, acct, ["supplementalCredentials"])
    if "supplementalCredentials" not in r:
        sys.exit("%s has no supplementalCredentials" % acct)
    scb = ndr_unpack(drsblobs.supplementalCredentialsBlob, r["supplementalCredentials"][0])
    keep = []
    for p in scb.sub.packages:
        if p.name == "Primary:" + NEWER:
            continue
        if p.name == "Packages":
            names = binascii.a2b_hex(p.data).decode("utf-16-le").split("\0")
            names = [n for n in names if n != NEWER]
            p.data = binascii.b2a_hex("\0".join(names).encode("utf-16-le")).decode().upper()
            p.data_len = len(p.data)
        keep.append(p)
    if len(keep) == len(scb.sub.packages):
        sys.exit("%s has no Primary:%s" % (acct, NEWER))
    scb.sub.packages = keep
    scb.sub.num_packages = len(keep)
    m = ldb.Message()
    m.dn = r.dn
    m["supplementalCredentials"] = ldb.MessageElement(
        ndr_pack(scb), ldb.FLAG_MOD_REPLACE, "supplementalCredentials")
    db.modify(m, controls=["local_oid:%s:0" % dsdb.DSDB_CONTROL_BYPASS_PASSWORD_HASH_OID])


def groups(db, acct, n):
    member = str(find(db, acct, ["dn"]).dn)
    have = len(db.search(base=db.domain_dn(), scope=ldb.SCOPE_SUBTREE,
                         expression="(sAMAccountName=%s-g*)" % ldb.binary_encode(acct),
                         attrs=["dn"]))
    # one transaction for all of them: a transaction a group costs a
    # commit (and its fsync) a group, 73 s for 2400 groups on a busy CI
    db.transaction_start()
    try:
        for i in range(have, n):
            name = "%s-g%d" % (acct, i)
            dn = "CN=%s,CN=Users,%s" % (name, db.domain_dn())
            db.add({"dn": dn, "objectClass": "group", "sAMAccountName": name,
                    "member": [member]})
    except BaseException:
        db.transaction_cancel()
        raise
    db.transaction_commit()


def main():
    if len(sys.argv) < 4 or sys.argv[3] not in ("enctypes", "rc4-only", "groups") or \
            (sys.argv[3] in ("enctypes", "groups") and len(sys.argv) != 5):
        sys.exit(__doc__)
    lp = LoadParm()
    lp.load(sys.argv[1])
    db = SamDB(url=lp.samdb_url(), lp=lp, session_info=system_session())
    if sys.argv[3] == "enctypes":
        enctypes(db, sys.argv[2], sys.argv[4])
    elif sys.argv[3] == "groups":
        groups(db, sys.argv[2], int(sys.argv[4]))
    else:
        rc4_only(db, sys.argv[2])


main()
