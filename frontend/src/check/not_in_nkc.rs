//! The NKI operations nkc does not have, each with a note saying why and a help saying what to
//! write instead: the table the operation checks and the diagnostics of `error` read.
//!
//! Invariant: a name is in the table only when no `nl.`/`nisa.` operation of the checker has it,
//! so a call that resolves never reaches it. This module imports nothing of the checker.

/// NKI operations nkc does not have, with what to write instead: `(note, help)`.
pub(super) fn not_in_nkc(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "dma_copy" => (
            "a copy between HBM and SBUF is a statement of its own",
            "write `nisa.dma_copy(dst=..., src=...)` as a statement, or `t = nl.load(src)` / `nl.store(dst, value=t)`",
        ),
        "reshape" => (
            "nkc keeps a tensor's layout: a tile is 2-D `[partitions, free]`, an HBM tensor keeps the shape it is given",
            "index the tensor as it is instead of reshaping it (a vector `v[i_f]` loads as one row, `x[b, i0:i1, :]` a block of rows)",
        ),
        "ap" => (
            "`t.ap([[step, count], ...])` is an access pattern of NKI beta 2: a strided, possibly overlapping view, and nkc's tiles are rectangular boxes of consecutive elements",
            "select each window offset with a slice (`t[:, j:j + n]`) and combine the slices with nl.maximum / nl.add, or reduce a tile whose free axis holds the window",
        ),
        "select_reduce" | "tensor_copy_predicated" | "tensor_scalar_cumulative" => (
            "nkc has this operation as a statement that writes its `dst=` tile",
            "write it as a statement with `dst=`: `nisa.select_reduce(dst=t, predicate=c, on_true=a, on_false=b)`, `nisa.tensor_copy_predicated(dst=t, src=s, predicate=c)`",
        ),
        "range_select" => (
            "nkc has no selection by a predicate on the indices",
            "compute the condition as a tile (a comparison such as nl.greater_equal(a, b)) and select with nl.where(cond, x, y)",
        ),
        "tensor_copy_dynamic_src" | "tensor_copy_dynamic_dst" => (
            "nkc's indices are affine in the loop variables: there is no indexing by values in a tile",
            "index with slices whose bounds are affine in the loop variables, or gather within partitions with nisa.local_gather / nl.gather_flattened",
        ),
        "random_seed" | "rand2" | "rand_set_state" | "rand_get_state" | "set_rng_seed" => (
            "nkc's random numbers have a fixed seed and no state to set or read",
            "draw them with nl.rand(shape) or nisa.dropout(data, prob=p), or pass them as an input tensor",
        ),
        "gelu_dx" => (
            "nkc has no gelu_dx",
            "write the derivative with nl.tanh, nl.multiply and nl.add; nl.silu_dx and nl.erf_dx exist",
        ),
        "rms_norm" => (
            "nkc has no fused rms_norm",
            "write it as nl.rsqrt(nl.mean(nl.square(x), axis=1) + eps) times x",
        ),
        "left_shift" | "right_shift" => (
            "nkc's tiles hold floats: there are no shifts",
            "multiply or divide by a power of two",
        ),
        "atomic_rmw" => (
            "nkc has no atomic read-modify-write of HBM",
            "accumulate in a tile on chip and nl.store it once",
        ),
        "expand_dims" => (
            "a tile is `[partitions, free]` here",
            "index with a size-1 range (`t[:, j:j+1]`) instead of adding a dimension",
        ),
        "spmd_dim" | "nc" => (
            "nkc runs a kernel once: there is no launch grid of program instances",
            "write the grid as a loop over the instances, `for pid in nl.affine_range(N):`, and index with `pid`",
        ),
        "builtin_custom_op" | "register_alloc" | "register_load" | "register_store" | "register_move" => (
            "nkc has no custom operations and no engine registers",
            "write the computation with nl / nisa operations on tiles",
        ),
        _ => return None,
    })
}
