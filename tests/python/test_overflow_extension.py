"""The compiled steady-state hook (_overflow_hooks.abi3.so, src/kernels/overflow/hooks.c): it is in
the wheel, does the common calls, changes no report, imports under every Python 3 on the machine
from its stable-ABI floor on, and when it is gone the Python hook reports the same."""
import glob
import os
import shutil
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is needed for the report tests")

import overflow_models  # noqa: E402
from opforge_ops import _native, overflow  # noqa: E402
from opforge_ops.overflow import debug  # noqa: E402

DATA = os.path.join(os.environ.get("OPFORGE_TEST_DATA",
                                   os.path.join(os.path.dirname(__file__), "..", "data")), "overflow")
EXT = debug._EXTENSION


def test_extension_is_in_the_package_and_loads():
    assert EXT is not None, (f"{debug.EXTENSION_FILE} is not in {_native.lib_dirs()} or does not load: "
                             "the wheel built by opforge should hold it")
    assert os.path.basename(EXT.__file__) == debug.EXTENSION_FILE
    assert EXT.LIMITED_API == 0x03080000


def counting(calls, **fixed):
    """A DebugUnderflowOverflow class whose compiled hook counts the calls it did itself."""
    def make(model, **kw):
        d = overflow.DebugUnderflowOverflow(model, **fixed, **kw)
        hook = d._hooks
        if hook is not None:
            def counted(*a):
                done = hook(*a)
                calls.append(done)
                return done
            d._hooks = counted
        return d
    return make


@pytest.mark.parametrize("deferred", [False, True])
@pytest.mark.parametrize("name", sorted(overflow_models.SCENARIOS))
def test_same_report_with_and_without_the_extension(name, deferred, monkeypatch):
    if EXT is None:
        pytest.skip("no extension (test_extension_is_in_the_package_and_loads says why)")
    golden = open(os.path.join(DATA, name + ".txt")).read()
    calls = []
    assert overflow_models.run(counting(calls, deferred=deferred), name) == golden
    if name != "finite_trace":  # traced batches never take the steady path
        assert any(calls), "the extension did none of the calls"
    monkeypatch.setattr(debug, "_EXTENSION", None)
    plain = []
    assert overflow_models.run(counting(plain, deferred=deferred), name) == golden
    assert not plain


@pytest.mark.parametrize("deferred", [False, True])
@pytest.mark.parametrize("fault", overflow_models.TWICE_FAULTS)
def test_faults_same_with_and_without_the_extension(fault, deferred, monkeypatch):
    calls = []
    got = overflow_models.run_twice(counting(calls, deferred=deferred), fault)
    monkeypatch.setattr(debug, "_EXTENSION", None)
    assert overflow_models.run_twice(counting([], deferred=deferred), fault) == got
    assert EXT is None or any(calls)


def test_package_without_the_extension_reports_the_same(tmp_path):
    # A copy of the package with the extension deleted: the Python hook does every call.
    pkg = os.path.dirname(os.path.dirname(overflow.__file__))
    copy = tmp_path / "site" / "opforge_ops"
    shutil.copytree(pkg, copy, ignore=shutil.ignore_patterns("__pycache__", "_lib"))
    (copy / "_lib").mkdir()
    for d in _native.lib_dirs():
        for f in glob.glob(os.path.join(d, "libopforge_*.so")):
            if not (copy / "_lib" / os.path.basename(f)).exists():
                shutil.copy(f, copy / "_lib")
    assert not (copy / "_lib" / debug.EXTENSION_FILE).exists()
    script = ("import sys, overflow_models\n"
              "from opforge_ops import overflow\nfrom opforge_ops.overflow import debug\n"
              "assert debug._EXTENSION is None\n"
              "for name in sorted(overflow_models.SCENARIOS):\n"
              "    for deferred in (False, True):\n"
              "        got = overflow_models.run(lambda m, **kw: overflow.DebugUnderflowOverflow(m, deferred=deferred, "
              "**kw), name)\n"
              "        sys.stdout.write(name + ' ' + str(deferred) + ' ' + str(got == open(sys.argv[1] + '/' + name + "
              "'.txt').read()) + '\\n')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), os.path.dirname(__file__)]),
               OPFORGE_OPS_LIB_DIR="")
    out = subprocess.run([sys.executable, "-c", script, DATA], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")[:-1]
    assert len(lines) == 2 * len(overflow_models.SCENARIOS)
    assert all(line.endswith(" True") for line in lines), out.stdout


def pythons():
    """Every Python 3 interpreter on the machine (by real path): the system's and pyenv's."""
    found = {}
    patterns = ["/usr/bin/python3*", "/usr/local/bin/python3*",
                os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")]
    for pattern in patterns:
        for p in sorted(glob.glob(pattern)):
            suffix = os.path.basename(p)[len("python3"):]  # "", ".11"; not "-config"
            if not os.access(p, os.X_OK) or (suffix and not (suffix[0] == "." and suffix[1:].isdigit())):
                continue
            found.setdefault(os.path.realpath(p), p)
    found.setdefault(os.path.realpath(sys.executable), sys.executable)
    return sorted(found.values())


IMPORT = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("_overflow_hooks", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
class D: _hooks_ctx = ()
try:
    m.hook(D(), None, None, None)
except TypeError as e:
    assert "context tuple" in str(e), e
else:
    raise SystemExit("a bad context was accepted")
print(m.CONTEXT_FIELDS, hex(m.LIMITED_API))
"""


@pytest.mark.parametrize("python", pythons())
def test_extension_imports_under_every_python(python):
    if EXT is None:
        pytest.skip("no extension (test_extension_is_in_the_package_and_loads says why)")
    v = subprocess.run([python, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
                       capture_output=True, text=True, timeout=60)
    if v.returncode != 0:
        pytest.skip(f"{python} does not run: {v.stderr.strip()[-200:]}")
    major, minor = map(int, v.stdout.split())
    floor = ((EXT.LIMITED_API >> 24) & 0xFF, (EXT.LIMITED_API >> 16) & 0xFF)
    if (major, minor) < floor:
        pytest.skip(f"{python} is Python {major}.{minor}, below the extension's stable-ABI floor "
                    f"{floor[0]}.{floor[1]} (the wheel is tagged cp{floor[0]}{floor[1]}-abi3)")
    out = subprocess.run([python, "-c", IMPORT, EXT.__file__], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"{python} ({major}.{minor}): {out.stderr}"
    assert out.stdout.split() == [str(EXT.CONTEXT_FIELDS), "0x3080000"]


def test_two_threads_each_get_their_own_report():
    # The compiled hook keeps nothing between calls: two threads hooking two models at once report
    # what each reports alone.
    import threading
    names = ("inf", "trace_1_3")

    def quiet_run(name):
        kwargs, kinds = overflow_models.SCENARIOS[name]
        model = overflow_models.Model()
        lines = []
        d = overflow.DebugUnderflowOverflow(model, **kwargs)
        d._emit = lines.append  # this thread's own output (print() goes to one stdout for all)
        try:
            for k, kind in enumerate(kinds):
                x, scale = overflow_models.batch(k, kind)
                model(x, scale)
        except ValueError:
            pass
        return lines

    expected = {name: quiet_run(name) for name in names}
    got = {}
    threads = [threading.Thread(target=lambda n=name: got.__setitem__(n, [quiet_run(n) for _ in range(20)]))
               for name in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for name in names:
        assert expected[name] and all(run == expected[name] for run in got[name]), name


def test_parameters_in_an_ordereddicts_own_order(monkeypatch):
    # Older torch keeps _parameters in an OrderedDict, whose order (move_to_end) can differ from its
    # dict part's: the compiled hook lists them in the mapping's own order, as named_parameters().
    import collections

    def run(ext):
        monkeypatch.setattr(debug, "_EXTENSION", ext)
        model = overflow_models.Model()
        for m in model.modules():
            m._parameters = collections.OrderedDict(m._parameters)
            if "weight" in m._parameters:
                m._parameters.move_to_end("weight")  # bias, then weight
        lines = []
        d = overflow.DebugUnderflowOverflow(model)
        d._emit = lines.append
        calls = []
        if d._hooks is not None:
            hook = d._hooks
            d._hooks = lambda *a: calls.append(hook(*a)) or calls[-1]
        with pytest.raises(ValueError):  # the dump shows the frames the steady-state hook saved
            for k, kind in enumerate(["finite", "finite", "nan"]):
                model(*overflow_models.batch(k, kind))
        return "\n".join(lines), any(calls)

    with_ext, used = run(EXT)
    without, _ = run(None)
    assert with_ext == without
    assert "bias" in with_ext and with_ext.index("bias") < with_ext.index("weight")
    assert EXT is None or used


@pytest.mark.parametrize("deferred", [False, True])
def test_attributes_changed_after_construction_are_followed(deferred, monkeypatch):
    # extended and deferred are read at every call, by the compiled hook as by the Python one.
    def run(ext):
        monkeypatch.setattr(debug, "_EXTENSION", ext)
        model = overflow_models.Model()
        lines = []
        d = overflow.DebugUnderflowOverflow(model, deferred=not deferred)
        d._emit = lines.append
        d.extended, d.deferred = True, deferred
        with pytest.raises(ValueError):
            for k, kind in enumerate(["finite", "finite", "nan"]):
                model(*overflow_models.batch(k, kind))
        return "\n".join(lines)

    got = run(EXT)
    assert "near_overflow=" in got
    assert got == run(None)


class _RaisingBool:
    """A value whose truth raises `exc` (read by the compiled hook: debug.frame)."""

    def __init__(self, exc):
        self.exc = exc

    def __bool__(self):
        raise self.exc


def _steady_model():
    """A model past its first batch: the compiled hook does its calls."""
    model = overflow_models.Model()
    d = overflow.DebugUnderflowOverflow(model)
    d._emit = lambda line: None
    x, scale = overflow_models.batch(0)
    model(x, scale)
    model(x, scale)
    assert d._steady and d._hooks is not None
    return model, d, x, scale


def test_a_raising_bool_is_the_python_hooks_turn_not_a_system_error():
    # PyObject_IsTrue -> -1: the hook returns False with no exception set (before, True with an
    # exception set: SystemError).
    if EXT is None:
        pytest.skip("no extension (test_extension_is_in_the_package_and_loads says why)")
    model, d, x, scale = _steady_model()
    h = model.embed(x)
    d.frame = _RaisingBool(ValueError("no truth"))
    assert EXT.hook(d, model.embed, (x,), h) is False


@pytest.mark.parametrize("exc", [KeyboardInterrupt, MemoryError])
def test_keyboard_interrupt_inside_a_hooked_forward_reaches_the_caller(exc):
    # The compiled hook does not swallow what is not an ordinary exception.
    if EXT is None:
        pytest.skip("no extension (test_extension_is_in_the_package_and_loads says why)")
    model, d, x, scale = _steady_model()
    h = model.embed(x)
    d.frame = _RaisingBool(exc())
    with pytest.raises(exc):
        EXT.hook(d, model.embed, (x,), h)
    with pytest.raises(exc):
        model(x, scale)  # through torch's forward hooks: the first hooked module's call raises it


def test_the_extension_carries_the_constants_debug_py_checks():
    if EXT is None:
        pytest.skip("no extension (test_extension_is_in_the_package_and_loads says why)")
    assert (EXT.NCTX, EXT.RECORD_SIZE) == (debug._NCTX, 80)


def test_an_extension_with_other_constants_is_not_used(monkeypatch):
    if EXT is None:
        pytest.skip("no extension (test_extension_is_in_the_package_and_loads says why)")
    monkeypatch.setattr(debug, "_NCTX", debug._NCTX + 1)
    assert debug.load_extension() is None
