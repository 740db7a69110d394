"""Builds the wheels of the wheel tests with zipfile: one well-formed wheel that uses every part
of the install scheme, and hostile ones. Usage: make_wheels.py OUT_DIR"""
import base64
import csv
import io
import hashlib
import os
import stat
import sys
import zipfile

OUT = sys.argv[1]


def digest(data):
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def csv_row(path, data):
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow([path, f"sha256={digest(data)}", len(data)])
    return out.getvalue()


def info(name, path, mode=0o644, kind=stat.S_IFREG):
    z = zipfile.ZipInfo(path, date_time=(2020, 1, 1, 0, 0, 0))
    z.create_system = 3
    z.external_attr = (kind | mode) << 16
    z.compress_type = zipfile.ZIP_DEFLATED
    return z


def build(filename, files, name="demo_pkg", version="1.0", record=None, extra=None,
          wheel_text=None, modes=None, kinds=None):
    """files: {path: bytes}; dist-info METADATA/WHEEL added unless given; RECORD computed
    unless `record` (a function of the computed rows) changes it; `extra` members are written
    after RECORD without a row."""
    dist_info = f"{name}-{version}.dist-info"
    files = dict(files)
    files.setdefault(f"{dist_info}/METADATA",
                     f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n".encode())
    files.setdefault(f"{dist_info}/WHEEL", (wheel_text or
                     "Wheel-Version: 1.0\nGenerator: venvfix-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n").encode())
    rows = [csv_row(p, d) for p, d in files.items()]
    rows.append(f"{dist_info}/RECORD,,")
    if record:
        rows = record(rows)
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(
        next(csv.reader([r])) for r in rows)
    files[f"{dist_info}/RECORD"] = out.getvalue().encode()
    modes = modes or {}
    kinds = kinds or {}
    os.makedirs(os.path.dirname(os.path.join(OUT, filename)), exist_ok=True)
    with zipfile.ZipFile(os.path.join(OUT, filename), "w") as z:
        for path, data in list(files.items()) + list((extra or {}).items()):
            z.writestr(info(name, path, modes.get(path, 0o644), kinds.get(path, stat.S_IFREG)), data)


D = "demo_pkg-1.0.data"
demo_files = {
    "demo_pkg/__init__.py": b"VERSION = '1.0'\n",
    "demo_pkg/cli.py": b"def main():\n    return 0\n\ndef gui():\n    return 0\n",
    "demo_pkg/tool.sh": b"#!/bin/sh\necho tool\n",
    "demo_pkg/data, with comma.txt": b"quoted in RECORD\n",
    f"{D}/scripts/demo-script": b"#!python -u\nprint('hello')\n",
    f"{D}/scripts/plain-script": b"#!/bin/sh\necho plain\n",
    f"{D}/scripts/democli-script.py": b"# setuptools wrapper, skipped by pip\n",
    f"{D}/data/share/demo/data.txt": b"data file\n",
    f"{D}/headers/demo.h": b"#define DEMO 1\n",
    f"{D}/purelib/demo_extra.py": b"EXTRA = 1\n",
    "demo_pkg-1.0.dist-info/entry_points.txt":
        b"[console_scripts]\ndemocli = demo_pkg.cli:main\ndemo-tool = demo_pkg.cli:main [extra]\n"
        b"\n[gui_scripts]\ndemogui = demo_pkg.cli:gui\n\n[other.group]\nx = y:z\n",
}
build("demo_pkg-1.0-py3-none-any.whl", demo_files,
      modes={"demo_pkg/tool.sh": 0o755, f"{D}/scripts/demo-script": 0o755})

plain = {"demo_pkg/__init__.py": b"x = 1\n"}
build("traversal/demo_pkg-1.0-py3-none-any.whl", {**plain, "demo_pkg/../../evil.py": b"evil\n"})
build("absolute/demo_pkg-1.0-py3-none-any.whl", {**plain, "/tmp/venvfix-evil.py": b"evil\n"})
build("backslash/demo_pkg-1.0-py3-none-any.whl", {**plain, "demo_pkg\\evil.py": b"evil\n"})
build("symlink/demo_pkg-1.0-py3-none-any.whl", {**plain, "demo_pkg/link": b"/etc/passwd"},
      modes={"demo_pkg/link": 0o777}, kinds={"demo_pkg/link": stat.S_IFLNK})
build("data-traversal/demo_pkg-1.0-py3-none-any.whl", {**plain, f"{D}/data/../../../../evil": b"e\n"})
build("unknown-key/demo_pkg-1.0-py3-none-any.whl", {**plain, f"{D}/nowhere/x": b"e\n"})
build("not-in-record/demo_pkg-1.0-py3-none-any.whl", plain, extra={"demo_pkg/extra.py": b"e\n"})
build("record-only/demo_pkg-1.0-py3-none-any.whl", plain,
      record=lambda rows: rows + [f"demo_pkg/ghost.py,sha256={digest(b'g')},1"])
build("wrong-hash/demo_pkg-1.0-py3-none-any.whl", {**plain, "demo_pkg/big.py": b"a" * 5000},
      record=lambda rows: [r.replace(digest(b"a" * 5000), digest(b"b" * 5000)) for r in rows])
build("wrong-size/demo_pkg-1.0-py3-none-any.whl", plain,
      record=lambda rows: [r.replace(",6", ",7") if r.startswith("demo_pkg/__init__") else r
                           for r in rows])
build("wrong-name/demo_pkg-1.0-py3-none-any.whl", plain, name="other_pkg")
build("wheel-version/demo_pkg-1.0-py3-none-any.whl", plain,
      wheel_text="Wheel-Version: 2.0\nRoot-Is-Purelib: true\n")
build("bad-entry-point/demo_pkg-1.0-py3-none-any.whl",
      {**plain, "demo_pkg-1.0.dist-info/entry_points.txt": b"[console_scripts]\nx = nocallable\n"})

# Duplicate entry: zipfile warns but writes both.
import warnings
warnings.simplefilter("ignore")
build("duplicate/demo_pkg-1.0-py3-none-any.whl", plain, extra={"demo_pkg/__init__.py": b"y = 2\n"})

# Zip bomb: 100 MiB of zeros, ~100 KiB compressed, recorded honestly.
zeros = bytes(100 << 20)
build("bomb/demo_pkg-1.0-py3-none-any.whl", {**plain, "demo_pkg/zeros.bin": zeros})

# Truncated and corrupt archives, from the good demo wheel.
good = open(os.path.join(OUT, "demo_pkg-1.0-py3-none-any.whl"), "rb").read()
os.makedirs(os.path.join(OUT, "truncated"), exist_ok=True)
open(os.path.join(OUT, "truncated/demo_pkg-1.0-py3-none-any.whl"), "wb").write(good[: len(good) // 2])
cd = good.rfind(b"PK\x01\x02")
corrupt = bytearray(good)
corrupt[cd + 10: cd + 30] = b"\xff" * 20  # method, time, crc, sizes of the last central entry
os.makedirs(os.path.join(OUT, "corrupt-cd"), exist_ok=True)
open(os.path.join(OUT, "corrupt-cd/demo_pkg-1.0-py3-none-any.whl"), "wb").write(bytes(corrupt))
os.makedirs(os.path.join(OUT, "not-zip"), exist_ok=True)
open(os.path.join(OUT, "not-zip/demo_pkg-1.0-py3-none-any.whl"), "wb").write(b"this is not a zip\n" * 10)

# For the parallel unpacker (parallel_unpack_test.cpp): every way a member can be stored.
import random
import struct
import zlib

rng = random.Random(7)
words = [rng.randbytes(rng.randint(3, 12)) for _ in range(50)]
compressible = b"".join(rng.choice(words) for _ in range(300000))[: 3 << 20]
mixed = {
    "demo_pkg/__init__.py": b"x = 1\n",
    "demo_pkg/empty.py": b"",
    "demo_pkg/stored_random.bin": rng.randbytes(2 << 20),
    "demo_pkg/deflate_text.bin": compressible,
    "demo_pkg/deflate_random.so": rng.randbytes(1 << 20),
    # Over 4 MiB compressed (StreamInflater::k_in_piece): coded and stored deflate blocks that
    # cross the pieces the streaming inflater is fed in.
    "demo_pkg/deflate_large.so": b"".join(
        rng.randbytes(1 << 20) if i % 3 == 0 else compressible[i << 16: (i + 8) << 16]
        for i in range(12)),
    "demo_pkg/bzip2.txt": compressible[: 300000],
    "demo_pkg/lzma.txt": compressible[100: 200000],
    **{f"demo_pkg/small/m{i}.py": b"# %d\n" % i * (i % 40) for i in range(200)},
}
methods = {"demo_pkg/stored_random.bin": zipfile.ZIP_STORED, "demo_pkg/bzip2.txt": zipfile.ZIP_BZIP2,
           "demo_pkg/lzma.txt": zipfile.ZIP_LZMA}


def build_mixed(filename, files, methods, modes):
    dist_info = "demo_pkg-1.0.dist-info"
    files = dict(files)
    files[f"{dist_info}/METADATA"] = b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n"
    files[f"{dist_info}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    rows = [csv_row(p, d) for p, d in files.items()] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(rows) + "\n").encode()
    os.makedirs(os.path.dirname(os.path.join(OUT, filename)), exist_ok=True)
    with zipfile.ZipFile(os.path.join(OUT, filename), "w") as z:
        for path, data in files.items():
            zi = info("demo_pkg", path, modes.get(path, 0o644))
            zi.compress_type = methods.get(path, zipfile.ZIP_DEFLATED)
            z.writestr(zi, data)
    return files


build_mixed("mixed/demo_pkg-1.0-py3-none-any.whl", mixed, methods,
            {"demo_pkg/deflate_random.so": 0o755})

# Members over ArrivingWheel's k_piped_member (8 MiB), hashed and written on a second thread
# while the first inflates (arriving_wheel_test.cpp): one deflated, of text and random runs, one
# stored.
big_rng = random.Random(11)
big_members = {
    "demo_pkg/__init__.py": b"x = 1\n",
    "demo_pkg/big_deflated.so": b"".join(
        compressible if i % 2 else big_rng.randbytes(1 << 20) for i in range(6)),
    "demo_pkg/big_stored.bin": big_rng.randbytes(9 << 20),
}
build_mixed("big-members/demo_pkg-1.0-py3-none-any.whl", big_members,
            {"demo_pkg/big_stored.bin": zipfile.ZIP_STORED}, {"demo_pkg/big_deflated.so": 0o755})


def data_offset(path, member):
    """Where `member`'s compressed bytes start in the zip at `path`."""
    raw = open(path, "rb").read()
    with zipfile.ZipFile(path) as z:
        offset = z.getinfo(member).header_offset
    name_len, extra_len = struct.unpack("<HH", raw[offset + 26: offset + 30])
    return bytearray(raw), offset + 30 + name_len + extra_len


# A deflate stream that starts with a block of the reserved type 3: every inflater refuses it.
path = os.path.join(OUT, "corrupt-deflate/demo_pkg-1.0-py3-none-any.whl")
build_mixed("corrupt-deflate/demo_pkg-1.0-py3-none-any.whl",
            {"demo_pkg/__init__.py": b"x = 1\n", "demo_pkg/a.txt": compressible[:400000],
             "demo_pkg/b.txt": compressible[:500000]}, {}, {})
raw, at = data_offset(path, "demo_pkg/b.txt")
raw[at] = 0x07
open(path, "wb").write(bytes(raw))

# RECORD.jws has no hash in RECORD: only the zip CRC-32 can tell that its bytes changed.
path = os.path.join(OUT, "bad-crc/demo_pkg-1.0-py3-none-any.whl")
build_mixed("bad-crc/demo_pkg-1.0-py3-none-any.whl", plain, {}, {})
with zipfile.ZipFile(path, "a") as z:
    zi = info("demo_pkg", "demo_pkg-1.0.dist-info/RECORD.jws")
    zi.compress_type = zipfile.ZIP_STORED
    z.writestr(zi, b"{\"signature\": \"abc\"}")
raw, at = data_offset(path, "demo_pkg-1.0.dist-info/RECORD.jws")
raw[at + 3] ^= 0x20
open(path, "wb").write(bytes(raw))


def write_zip64(filename, files):
    """A zip whose every size and offset is in zip64 extra fields, with a zip64 end record,
    as a writer does for archives over 4 GiB (this one is small)."""
    out = bytearray()
    central = bytearray()
    for name, data in files.items():
        packed = zlib.compress(data, 6)[2:-4]
        crc = zlib.crc32(data)
        offset = len(out)
        extra = struct.pack("<HHQQ", 1, 16, len(data), len(packed))
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0x800, 8, 0, 0x5021, crc,
                           0xFFFFFFFF, 0xFFFFFFFF, len(name.encode()), len(extra))
        out += name.encode() + extra + packed
        cextra = struct.pack("<HHQQQ", 1, 24, len(data), len(packed), offset)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, (3 << 8) | 45, 45, 0x800, 8, 0,
                               0x5021, crc, 0xFFFFFFFF, 0xFFFFFFFF, len(name.encode()),
                               len(cextra), 0, 0, 0, (0o100644 << 16), 0xFFFFFFFF)
        central += name.encode() + cextra
    cd_offset = len(out)
    out += central
    eocd64 = len(out)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, len(files), len(files),
                       len(central), cd_offset)
    out += struct.pack("<IIQI", 0x07064B50, 0, eocd64, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    os.makedirs(os.path.dirname(os.path.join(OUT, filename)), exist_ok=True)
    open(os.path.join(OUT, filename), "wb").write(bytes(out))


def write_plain_zip(filename, members):
    """A zip written by hand, so that what its headers (and RECORD) say can differ from what its
    deflate streams hold: members are (name, packed, declared_size, crc), `packed` the raw
    deflate bytes stored, `declared_size` and `crc` what both headers say."""
    out = bytearray()
    central = bytearray()
    for name, packed, size, crc in members:
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x5021, crc, len(packed),
                           size, len(name.encode()), 0)
        out += name.encode() + packed
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, (3 << 8) | 20, 20, 0, 8, 0,
                               0x5021, crc, len(packed), size, len(name.encode()), 0, 0, 0, 0,
                               (0o100644 << 16), offset)
        central += name.encode()
    cd_offset = len(out)
    out += central
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central),
                       cd_offset, 0)
    os.makedirs(os.path.dirname(os.path.join(OUT, filename)), exist_ok=True)
    open(os.path.join(OUT, filename), "wb").write(bytes(out))


def deflate_raw(data):
    return zlib.compress(data, 6)[2:-4]


def stream_hostile(filename, member, packed, declared):
    """demo_pkg with `member` stored as `packed`, its headers and RECORD saying `declared` (the
    bytes it should hold): only inflating it shows the lie."""
    meta = {"demo_pkg/__init__.py": b"x = 1\n",
            "demo_pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
            "demo_pkg-1.0.dist-info/WHEEL":
                b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    rows = [csv_row(p, d) for p, d in meta.items()] + [csv_row(member, declared)]
    meta["demo_pkg-1.0.dist-info/RECORD"] = (
        "\n".join(rows + ["demo_pkg-1.0.dist-info/RECORD,,"]) + "\n").encode()
    members = [(p, deflate_raw(d), len(d), zlib.crc32(d)) for p, d in meta.items()]
    members.insert(1, (member, packed, len(declared), zlib.crc32(declared)))
    write_plain_zip(filename, members)


# Mid-stream refusals (parallel_unpack_test.cpp). A zip bomb that shows its size only as it
# inflates: headers and RECORD say 2 MiB (sha256 of the first 2 MiB), the stream holds 256 MiB.
bomb_zeros = bytes(256 << 20)
bomb_packed = deflate_raw(bomb_zeros)
stream_hostile("stream-bomb/demo_pkg-1.0-py3-none-any.whl", "demo_pkg/zeros.bin",
               bomb_packed, bomb_zeros[: 2 << 20])
# The same saying 10 MiB: over ArrivingWheel's k_piped_member, so its second thread is stopped.
stream_hostile("stream-bomb-big/demo_pkg-1.0-py3-none-any.whl", "demo_pkg/zeros.bin",
               bomb_packed, bomb_zeros[: 10 << 20])
# A member that yields less than its headers and RECORD say (3 MiB said, 2 MiB held).
short = compressible[: 3 << 20]
stream_hostile("stream-short/demo_pkg-1.0-py3-none-any.whl", "demo_pkg/short.bin",
               deflate_raw(short[: 2 << 20]), short)
# A deflate stream cut in the middle, as a truncated download would be: headers agree on the
# shorter compressed size, the stream ends before its final block.
stream_hostile("stream-truncated/demo_pkg-1.0-py3-none-any.whl", "demo_pkg/cut.bin",
               deflate_raw(short)[: len(deflate_raw(short)) // 2], short)


z64 = {"demo_pkg/__init__.py": b"x = 1\n", "demo_pkg/text.txt": compressible[:100000],
       "demo_pkg-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
       "demo_pkg-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
z64["demo_pkg-1.0.dist-info/RECORD"] = (
    "\n".join([csv_row(p, d) for p, d in z64.items()] + ["demo_pkg-1.0.dist-info/RECORD,,"]) + "\n").encode()
write_zip64("zip64/demo_pkg-1.0-py3-none-any.whl", z64)


# Non-ASCII member names (unicode_pkg_test.cpp). zipfile sets the UTF-8 flag (bit 11) on every
# name that is not ASCII; a name stored without it is CP437 to zipfile, and so to pip. Such a
# name is written here under an ASCII placeholder of the same byte length, then the placeholder
# bytes are replaced in the local header and the central directory (the zip CRC covers data
# only). RECORD lists every name as zipfile decodes it, in UTF-8.
def build_names(filename, files, raw=None, flagged_raw=None, name="unicode_pkg"):
    """files: {decoded name: bytes}; raw: {decoded name: CP437 bytes stored without the flag};
    flagged_raw: {placeholder name: bytes stored with the flag (invalid UTF-8)}."""
    raw = raw or {}
    flagged_raw = flagged_raw or {}
    dist_info = f"{name}-1.0.dist-info"
    files = dict(files)
    files[f"{dist_info}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode()
    files[f"{dist_info}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    rows = [csv_row(p, d) for p, d in files.items()] + [f"{dist_info}/RECORD,,"]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(next(csv.reader([r])) for r in rows)
    files[f"{dist_info}/RECORD"] = out.getvalue().encode()
    placeholders = {}
    path = os.path.join(OUT, filename)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for i, (member, data) in enumerate(files.items()):
            stored = raw.get(member) or flagged_raw.get(member)
            zi = info(name, member)
            if stored is not None:
                holder = f"{member.split('/')[0]}/@{i:03d}".ljust(len(stored), "@")
                assert len(holder) == len(stored) and holder.encode().isascii()
                placeholders[holder.encode()] = (stored, member in flagged_raw)
                zi = info(name, holder)
            z.writestr(zi, data)
    data = bytearray(open(path, "rb").read())
    for holder, (stored, flagged) in placeholders.items():
        at = [i for i in range(len(data)) if data.startswith(holder, i)]
        assert len(at) == 2, holder
        for i in at:
            data[i:i + len(stored)] = stored
            # zipfile clears flag_bits when it writes; set bit 11 in the header itself.
            if flagged and data[i - 30:i - 26] == b"PK\x03\x04":
                data[i - 23] |= 0x08
            if flagged and data[i - 46:i - 42] == b"PK\x01\x02":
                data[i - 37] |= 0x08
    open(path, "wb").write(bytes(data))


U = "unicode_pkg"
unicode_files = {
    f"{U}/__init__.py": "NAME = 'caf\u00e9'\n".encode(),
    f"{U}/caf\u00e9.py": b"X = 1\n",  # NFC e-acute
    f"{U}/\u65e5\u672c\u8a9e/\u30c7\u30fc\u30bf.txt": "\u30c7\u30fc\u30bf\n".encode(),
    f"{U}/na\u00efve dir/\u00fc, with comma.txt": b"quoted in RECORD\n",
    f"{U}/\U0001f40d.txt": b"four UTF-8 bytes\n",
    f"{U}-1.0.data/data/share/\u00fcni/d\u00e4ta.txt": b"data\n",
    f"{U}-1.0.data/scripts/gr\u00fc\u00df": b"#!python\nprint('gruess')\n",
}
build_names("unicode_pkg-1.0-py3-none-any.whl", unicode_files)

# Every byte above 0x7f in names stored without the flag, in two members (ext4 allows 255
# bytes per name), beside a flagged non-ASCII name.
high = bytes(range(0x80, 0x100))
cp437_raw = {f"{U}/".encode() + high[:64]: b"first half\n", f"{U}/".encode() + high[64:]: b"second\n"}
cp437_files = {f"{U}/__init__.py": b"x = 1\n", f"{U}/caf\u00e9.py": b"X = 1\n"}
cp437_map = {}
for stored, data in cp437_raw.items():
    cp437_files[stored.decode("cp437")] = data
    cp437_map[stored.decode("cp437")] = stored
build_names("cp437/unicode_pkg-1.0-py3-none-any.whl", cp437_files, raw=cp437_map)

# The UTF-8 flag on bytes that are not UTF-8: zipfile's decode fails, the wheel is refused.
build_names("bad-utf8/unicode_pkg-1.0-py3-none-any.whl",
            {f"{U}/__init__.py": b"x = 1\n", f"{U}/bad.py": b"y = 1\n"},
            flagged_raw={f"{U}/bad.py": f"{U}/b".encode() + b"\xff\xfe.py"})

# NFC and NFD twins: two files to pip, which never normalises names (nor does venvfix, which
# takes names from the central directory's bytes, not libarchive's NFC-composed ones).
build_names("nfc-nfd/unicode_pkg-1.0-py3-none-any.whl",
            {f"{U}/__init__.py": b"x = 1\n", f"{U}/caf\u00e9.py": b"X = 1\n",
             f"{U}/cafe\u0301.py": b"X = 2\n"})
# Lone NFD names (as macOS writes them): installed under the same bytes, not composed.
build_names("nfd/unicode_pkg-1.0-py3-none-any.whl",
            {f"{U}/__init__.py": b"x = 1\n", f"{U}/cafe\u0301.py": b"X = 1\n",
             f"{U}/A\u030angstro\u0308m/n\u0303.txt": b"decomposed\n",
             f"{U}-1.0.data/scripts/gru\u0308\u00df": b"#!python\nprint('gruess')\n"})

# A flagged "é" and a CP437 0x82 ("é" too): two members of one name once decoded.
build_names("same-decoded/unicode_pkg-1.0-py3-none-any.whl",
            {f"{U}/__init__.py": b"x = 1\n", f"{U}/caf\u00e9.py": b"X = 1\n",
             f"{U}/caf\u00e9.pyX": b"X = 2\n"},
            raw={f"{U}/caf\u00e9.pyX": f"{U}/caf".encode() + b"\x82.py"})
