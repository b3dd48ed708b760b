//! What NKI's tracer does with the Python around the tile operations of a public kernel, as
//! nkc's front end must do it: an HBM tensor is a true object in a condition
//! (`x = nl.load(x) if x else None`); an output is named as it is returned even when the name was
//! bound to an unused array before; host code at module level that nkc's compile-time Python
//! does not run (`np.random.rand(...)`, `nki.simulate(kernel)(a, b)`) is deferred, not an error
//! of the kernel.

mod common;
use common::{nkc, run_checked_json, scratch_kernel, stderr};

#[test]
fn an_hbm_tensor_is_true_in_a_condition() {
    let f = scratch_kernel(
        "traced_host",
        "hbm_truth.py",
        "import neuronxcc.nki.language as nl\n\
         def k(a: nl.hbm[nl.float32, 64, 32], b: nl.hbm[nl.float32, 64, 32]):\n\
         \x20   out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)\n\
         \x20   t = nl.load(a)\n\
         \x20   u = nl.load(b) if b else None\n\
         \x20   if a:\n\
         \x20       t = nl.add(t, u)\n\
         \x20   nl.store(out, value=t)\n\
         \x20   return out\n",
    );
    let (v, _) = run_checked_json(&f, &[]);
    assert!(v["cycles"].as_u64().is_some(), "{v}");
}

#[test]
fn an_output_takes_the_name_it_is_returned_as() {
    let f = scratch_kernel(
        "traced_host",
        "rebound_out.py",
        "import neuronxcc.nki.language as nl\n\
         def k(a: nl.hbm[nl.float32, 64, 32]):\n\
         \x20   out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)\n\
         \x20   out = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.shared_hbm)\n\
         \x20   nl.store(out, value=nl.exp(nl.load(a)))\n\
         \x20   return out\n",
    );
    let (v, _) = run_checked_json(&f, &[]);
    let files: Vec<&String> = v["dtypes"].as_object().expect("dtypes").keys().collect();
    assert_eq!(files, ["out"], "{v}");
}

#[test]
fn module_level_host_code_is_deferred() {
    let f = scratch_kernel(
        "traced_host",
        "host_inputs.py",
        "import numpy as np\nimport nki\nimport nki.language as nl\n\
         @nki.jit\n\
         def add(a, b):\n\
         \x20   out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)\n\
         \x20   nl.store(out, value=nl.add(nl.load(a), nl.load(b)))\n\
         \x20   return out\n\
         a = np.random.rand(128, 64).astype(np.float32)\n\
         b = np.random.rand(128, 64).astype(np.float32)\n\
         result = nki.simulate(add)(a, b)\n\
         np.testing.assert_allclose(result, a + b, rtol=1e-5)\n",
    );
    let o = nkc(&[
        "run", &f, "--kernel", "add", "--shape", "a=128x64", "--shape", "b=128x64", "--check",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}
