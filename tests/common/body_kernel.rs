//! The loop body of `n` statements that the compile bench (`benches/compile.rs`,
//! `compile/body`) and the linear-time tests (`tests/linear_walks.rs`, `tests/linear_deps.rs`)
//! grow: a loop of 8 iterations whose body is a chain of `n` elementwise statements (an `exp`,
//! then an `add`, alternately) between a load and a store. On `emergent` it is spread over a
//! stage per statement, so nearly every instance of the kernel is predicated off.
//!
//! Invariant: one generator for every user, so the figures of the bench and the tests are of
//! the same kernels.

/// The kernel of a body of `n` statements besides its load and store; `num_stages` is the
/// user's stages of the loop, when given (the bench's 3: tiles of 8 columns, so the 1,024 of
/// the largest body, triple-buffered, fit SBUF).
pub fn body_kernel(n: usize, num_stages: Option<u32>) -> String {
    let stages = num_stages.map_or(String::new(), |s| format!(", num_stages={s}"));
    let mut s = format!(
        "def chain(a: nl.hbm[nl.float32, 1024, 8]):\n    \
         c = nl.ndarray((1024, 8), dtype=nl.float32, buffer=nl.shared_hbm)\n    \
         for i in nl.affine_range(8{stages}):\n        \
         t0 = nl.load(a[i * 128:(i + 1) * 128, :])\n",
    );
    for k in 1..=n {
        let op = if k % 2 == 1 {
            format!("nl.exp(t{})", k - 1)
        } else {
            format!("nl.add(t{}, 1.0)", k - 1)
        };
        s += &format!("        t{k} = {op}\n");
    }
    s += &format!("        nl.store(c[i * 128:(i + 1) * 128, :], value=t{n})\n    return c\n");
    s
}
