"""Generates the C source of the cffi extension pyctrecon._ctrecon (API mode).

Run by python/CMakeLists.txt at build time:
    python build_ffi.py --cc CC --include INCLUDE_DIR --out FILE.c

The declarations come from the public headers themselves: the C compiler's
preprocessor expands include/ctrecon.h (with empty <stddef.h> and <stdint.h>,
whose types cffi knows, and CTR_API empty); the version constants and other
numeric macros become cffi constants. In API mode the generated source
includes <ctrecon.h>, so the C compiler checks every declaration, struct
layout and constant against the real headers.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import cffi

# Callbacks the library calls; each acquires the GIL (cffi's extern "Python").
CALLBACKS = """
extern "Python" int ctrpy_progress(void *, const char *, double);
extern "Python" void ctrpy_log(void *, ctr_log_level, const char *);
extern "Python" int ctrpy_iterate(void *, const ctr_iterate_info *);
extern "Python" int ctrpy_pet_iteration(void *, int, const float *);
extern "Python" double ctrpy_pet_kernel(void *, double, double, double, double);
"""

# DLPack's C structs (the DLPack exchange ABI, version 0.x and 1.x managed
# tensors share DLTensor), for reading a capsule's GPU pointer and layout.
DLPACK = """
typedef struct { int device_type; int device_id; } ctrpy_dl_device;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } ctrpy_dl_dtype;
typedef struct {
  void *data;
  ctrpy_dl_device device;
  int32_t ndim;
  ctrpy_dl_dtype dtype;
  int64_t *shape;
  int64_t *strides;
  uint64_t byte_offset;
} ctrpy_dl_tensor;
"""

INT_MACRO = re.compile(r"#define (CTR_[A-Z0-9_]+) (\(?-?[0-9]+u?\)?)\s*$")
FLOAT_MACRO = re.compile(r"#define (CTR_[A-Z0-9_]+) (\(?-?[0-9.]+e?[-+0-9]*\)?)\s*$")


def declarations(cc, include):
    """The preprocessed public API and its numeric constants, as cdef text."""
    with tempfile.TemporaryDirectory() as fake:
        for h in ("stddef.h", "stdint.h"):
            open(os.path.join(fake, h), "w").close()
        # The empty headers come first: -nostdinc leaves the directories of
        # CPATH and C_INCLUDE_PATH, which are searched like -I ones (a GPU
        # machine's CPATH put GCC 13's own stddef.h, max_align_t and its
        # __attribute__, in front of an -isystem fake); they are dropped too.
        cmd = [cc, "-E", "-P", "-dD", "-nostdinc", "-I", fake, "-I", include,
               "-U__GNUC__", "-U__clang__", os.path.join(include, "ctrecon.h")]
        env = {k: v for k, v in os.environ.items()
               if k not in ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "OBJC_INCLUDE_PATH")}
        text = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    decls, consts = [], []
    for line in text.splitlines():
        if line.startswith("#"):
            m = INT_MACRO.match(line)
            if m:
                consts.append("#define %s ..." % m.group(1))
                continue
            m = FLOAT_MACRO.match(line)
            if m:
                consts.append("static const double %s;" % m.group(1))
            continue
        decls.append(line)
    return "\n".join(decls) + "\n" + "\n".join(consts) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    ffi = cffi.FFI()
    # free(): strings the library returns (ctr_geometry_to_json_string)
    ffi.cdef(declarations(a.cc, a.include) + DLPACK + CALLBACKS + "void free(void *);\n")
    ffi.set_source("pyctrecon._ctrecon", "#include <stdlib.h>\n#include <ctrecon.h>\n" + DLPACK)
    tmp = a.out + ".tmp"
    ffi.emit_c_code(tmp)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
