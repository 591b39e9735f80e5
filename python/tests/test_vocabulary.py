"""One vocabulary (docs/vocabulary.md, issue 46): the tool's options and
Python's keywords for the same setting have the same name and default. The
table of docs/vocabulary.md is the one source: each row's CLI default must be
what the command's --help says, its Python default what the functions'
signatures say, and the two the same value unless the row says **differs**.
A CLI option and a Python keyword of the same name without a row fail too,
so that a new shared option comes with its row."""
import ast
import functools
import inspect
import os
import re
import warnings

import numpy as np
import pytest

import pyctrecon

from conftest import same

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "vocabulary.md")

# the default in a help line: the words after "default" up to ": ", ";" or ")"
_DEFAULT = re.compile(r"\bdefault:? ((?:[^);:]|:(?! ))+)")
# Python defaults that stand for a computed or "as the tool says" value
_AUTOMATIC = (None, 0, 0.0, -1, False, "auto", (0, 0), (0, 0, 1))
# the (command, function) families compared: every option of the command
# that is a keyword (with a default) of the function needs a row
FAMILIES = [
    ("fdk", "fdk"), ("fdk", "fdk_file"), ("fdk", "fdk_filter"), ("fbp", "fbp"),
    ("fbp", "fbp_stream"), ("fbp", "Corrections"), ("iterate", "iterate"),
    ("iterate", "Projector"), ("iterate", "ParallelGeometry"),
    ("pet recon", "pet_reconstruct"), ("phantom", "Phantom.project"),
    ("phantom", "Phantom.shepp_logan"), ("geometry", "ConeGeometry.circular"),
    ("geometry", "ConeGeometry.helical"),
    ("all", "Context"),
]
# the same word, not the same setting
UNSHARED = {
    "out": "a file for the tool, an array for Python",
    "sinograms": "fbp's --sinograms FILE is the input; fbp_stream's sinograms=True says the "
                 "array holds sinograms",
    "truth": "a file for the tool, an array for Python",
    "box": "no default on either side: off unless given",
}


def _rows():
    rows = []
    with open(DOC, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 8 or not cells[1].startswith("`--"):
                continue
            cmd, opt, cli_default, kw, of, py_default, _, decision = cells
            rows.append({
                "cmd": cmd, "option": opt.strip("`"), "cli": cli_default,
                "keyword": kw.strip("`"), "of": re.findall(r"`([A-Za-z_.]+)`", of),
                "py": ast.literal_eval(py_default.strip("`")),
                "differs": "**differs**" in decision, "line": line.strip()})
    return rows


ROWS = _rows()


def _help_command(cmd):
    return "fdk" if cmd == "all" else cmd


@functools.lru_cache(maxsize=None)
def _cli_defaults(cli, cmd):
    """{option: default words or None} of `ctrecon CMD --help`."""
    out = cli(*_help_command(cmd).split(), "--help").stdout
    helps, last = {}, None
    for line in out.split("\n"):
        m = re.match(r"  (--[a-z0-9-]+)(?: \S+)?(?:\s{2,}(.*))?$", line)
        if m:
            last = m.group(1)
            helps[last] = m.group(2) or ""
        elif last and line.startswith(" " * 28):
            helps[last] += line.strip()
    return {k: (m.group(1).strip() if (m := _DEFAULT.search(h)) else None)
            for k, h in helps.items()}


def _function(name):
    obj = pyctrecon
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _py_default(fn, keyword):
    """The default of `keyword` ("a:b": a tuple of two) in fn's signature."""
    params = inspect.signature(fn).parameters
    vals = []
    for k in keyword.split(":"):
        assert k in params, f"{fn.__qualname__} has no keyword {k}"
        assert params[k].default is not inspect.Parameter.empty, \
            f"{fn.__qualname__}({k}=) has no default"
        vals.append(params[k].default)
    return vals[0] if len(vals) == 1 else tuple(vals)


def _words(v):
    """A Python value as the tool's help writes it."""
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, tuple):
        return ":".join(_words(x) for x in v)
    return str(v)


def test_table_is_read():
    assert len(ROWS) > 80, f"{DOC}: {len(ROWS)} rows read"
    assert {r["cmd"] for r in ROWS} >= {"fdk", "fbp", "iterate", "pet recon", "phantom",
                                        "geometry", "all"}


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['cmd']} {r['option']}" for r in ROWS])
def test_row(row, cli):
    helps = _cli_defaults(cli, row["cmd"])
    assert row["option"] in helps, f"ctrecon {row['cmd']} has no {row['option']}"
    assert helps[row["option"]] == row["cli"], (
        f"ctrecon {row['cmd']} --help: {row['option']}'s default is {helps[row['option']]!r}, "
        f"docs/vocabulary.md says {row['cli']!r}")
    for name in row["of"]:
        got = _py_default(_function(name), row["keyword"])
        assert got == row["py"] and type(got) is type(row["py"]), (
            f"{name}({row['keyword']}=) defaults to {got!r}, docs/vocabulary.md says "
            f"{row['py']!r}")
    if row["differs"] or row["py"] in _AUTOMATIC and _words(row["py"]) != row["cli"]:
        if row["py"] not in _AUTOMATIC:
            return  # a stated difference
        # an automatic Python default: the CLI's words must not be a value
        assert not re.fullmatch(r"-?[0-9.]+|on|ram-lak|hann|shepp-logan|hamming|cosine",
                                row["cli"]), (
            f"{row['option']}: the tool's default {row['cli']!r} is a value, Python's "
            f"{row['py']!r} an automatic one: make them the same")
        return
    assert _words(row["py"]) == row["cli"], (
        f"{row['cmd']} {row['option']} defaults to {row['cli']!r}, Python's "
        f"{row['keyword']} to {row['py']!r}: one of them is wrong (docs/vocabulary.md)")


@pytest.mark.parametrize("cmd,fn", FAMILIES)
def test_every_shared_option_has_a_row(cmd, fn, cli):
    helps = _cli_defaults(cli, cmd)
    params = inspect.signature(_function(fn)).parameters
    covered = {(r["option"], k) for r in ROWS if r["cmd"] == cmd and fn in r["of"]
               for k in r["keyword"].split(":")}
    for option in helps:
        kw = option[2:].replace("-", "_")
        if kw in UNSHARED or kw not in params:
            continue
        if params[kw].default is inspect.Parameter.empty:
            continue  # required in Python: nothing to compare
        assert any(o == option for o, _ in covered), (
            f"ctrecon {_help_command(cmd)} {option} and {fn}({kw}=) name the same setting but "
            f"docs/vocabulary.md has no row for them: add one")


def test_deprecated_options_are_hidden(cli):
    for cmd, old in [("fdk", "--filter"), ("fdk", "--subvolume-slices"), ("fdk", "--gpu-mem"),
                     ("fdk", "--host-mem"), ("fbp", "--filter"), ("iterate", "--slab-slices"),
                     ("geometry", "--start"), ("geometry", "--range"), ("fbp", "--rings"),
                     ("fbp", "--ring-size"), ("fbp", "--ring-level"), ("fbp", "--ring-sigma"),
                     ("fbp", "--ring-wavelet"), ("fbp", "--paganin")]:
        assert old not in _cli_defaults(cli, cmd), f"ctrecon {cmd} --help lists {old}"


def test_deprecated_python_names_work_and_warn(cpu):
    g = pyctrecon.ConeGeometry.circular(sid=500, sdd=800, nu=24, nv=16, du=2.0, dv=2.0,
                                        nviews=12, volume=pyctrecon.Volume.cube(12, 2.0))
    p = np.ones(g.projection_shape, np.float32)
    pyctrecon._core._warned.discard('interp="default"')
    with pytest.warns(FutureWarning, match='interp="default" is deprecated: use interp="auto"'):
        old = pyctrecon.fdk(p, g, interp="default", ctx=cpu)
    assert same(old, pyctrecon.fdk(p, g, interp="auto", ctx=cpu))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per process: no second warning
        pyctrecon.fdk(p, g, interp="default", ctx=cpu)
    with pytest.raises(TypeError, match="gpus= and devices= name the same setting"), \
            pytest.warns(FutureWarning, match=r"Context\(devices=...\) is deprecated"):
        pyctrecon._core._warned.discard("Context(devices=...)")
        pyctrecon.Context("cpu", gpus=[0], devices=[0])
    with pytest.raises(ValueError, match='expected "auto", "cpu", "cuda" or "cuda:N"'):
        pyctrecon.Context("cuda:one")


def test_errors_name_python_keywords(cpu):
    """Library messages that name C members bare name the keywords."""
    with pytest.raises(pyctrecon.InvalidArgumentError) as e:
        pyctrecon.Context("cpu", threads=-2)
    assert "threads is -2" in str(e.value) and "num_threads" not in str(e.value)
    with pytest.raises(pyctrecon.GeometryError) as e:
        pyctrecon.ConeGeometry.circular(sid=500, sdd=800, nu=8, nv=8, nviews=4,
                                        angle_range=800, volume=pyctrecon.Volume.cube(8, 1.0))
    assert "angle_range = 800" in str(e.value) and "_deg" not in str(e.value)
    s = np.zeros((2, 10, 16), np.float32)
    with pytest.raises(pyctrecon.InvalidArgumentError) as e:
        pyctrecon.fbp_stream(s, sinograms=True, axis="center", rows=(5, 10), ctx=cpu)
    assert "rows = 5, 10" in str(e.value) and "nrows" not in str(e.value)
    g = pyctrecon.ConeGeometry.circular(sid=500, sdd=800, nu=8, nv=8, nviews=4,
                                        volume=pyctrecon.Volume.cube(8, 1.0))
    with pytest.raises(ValueError, match=r"z0=9, nz=0: expected 0 <= z0 < 8"), \
            pytest.warns(pyctrecon.conebeam.FdkGeometryWarning) as w:
        pyctrecon.fdk(np.zeros(g.projection_shape, np.float32), g, z0=9, ctx=cpu)
    # the warning cites the Python function, no C function
    assert "pyctrecon.iterate" in str(w[0].message) and "ctr_" not in str(w[0].message)


def test_fdk_defaults_match_the_tool(small_cone, cli, cpu, tmp_path):
    """No option on either side: the same volume, bit for bit (the window
    was hann in the tool and ram-lak in Python before issue 46)."""
    g_file, proj, _ = small_cone
    cli("fdk", "--geometry", g_file, "--projections", proj, "--out", tmp_path / "d.nrrd",
        "--device", "cpu", "--quiet")
    g = pyctrecon.ConeGeometry.load(g_file)
    mine = pyctrecon.fdk(pyctrecon.io.load(proj), g, ctx=cpu)
    assert same(mine, pyctrecon.io.load(tmp_path / "d.nrrd"))


def test_iterate_defaults_match_the_tool(small_cone, cli, cpu, tmp_path):
    g_file, proj, _ = small_cone
    cli("iterate", "--geometry", g_file, "--projections", proj, "--out", tmp_path / "i.nrrd",
        "--device", "cpu", "--quiet")
    g = pyctrecon.ConeGeometry.load(g_file)
    mine = pyctrecon.iterate(pyctrecon.Projector(g, ctx=cpu), pyctrecon.io.load(proj))
    assert same(mine, pyctrecon.io.load(tmp_path / "i.nrrd"))
