//! `nkc explain CODE`: the long explanation of every diagnostic code.
//!
//! The codes themselves are defined where they are reported (`crate::codes` for the front end
//! and the driver, `penguin::pipeline::codes` for the pipeliner, `backend::error` for the
//! backend); this table holds, per code, what the problem is, why nkc refuses it, and how to fix
//! it, in a few sentences. It is kept apart from the definitions so that adding a code and
//! explaining it are separate edits.
//!
//! Invariants: [`EXPLANATIONS`] is sorted by code, holds each code once, and holds every code
//! that any table of codes defines (a test reads the tables' sources and checks it), retired
//! ones included (marked so).

/// `(code, explanation)`, sorted by code.
pub const EXPLANATIONS: &[(&str, &str)] = &[
    ("E0001", "A character that cannot start a token, such as `$` or `?` outside a comment. Kernels are Python: remove the character, or put it in a comment."),
    ("E0002", "A tab in the indentation of a line. nkc, like a careful Python style, takes spaces only, so that the blocks mean the same in every editor: indent with spaces."),
    ("E0003", "A dedent to a column that matches no enclosing block. Every line that leaves a block must return to the indentation of a block it is in: align it with the `def` or `for` it belongs to."),
    ("E0004", "An indented line where no block was opened: only a line after a `def`, `for`, `if` (or other header ending in `:`) may be indented more than the line before it."),
    ("E0005", "An unclosed `(` or `[`: the file (or the logical line) ends before the bracket is closed. Close it; the label points at the opening bracket."),
    ("E0006", "A closing bracket that does not match the open one, such as `(a]`. Close each bracket with its own kind, innermost first."),
    ("E0007", "An integer literal that does not fit in 64 bits. Compile-time integers are 64-bit signed; a tensor dimension or a trip count is far smaller (at most 2^24)."),
    ("E0008", "Brackets or blocks nested too deeply (more than 64 levels), or a logical line of more than 1,000 tokens. These limits keep every input from exhausting the parser; split the expression or the line."),
    ("E0009", "A malformed number literal, such as `1e` or `0x`. Write the number the way Python accepts it."),
    ("E0010", "An unexpected token: the general syntax error. The message says what the parser expected at this point; often a missing operator, comma or bracket just before the label."),
    ("E0011", "A missing `:` after a `def` or `for` header. Python requires the colon before the indented block: `for i in nl.affine_range(4):`."),
    ("E0012", "A header (`def`, `for`, `if`) with no indented block after it. Give it a body, indented more than the header (use `pass` for an empty one where the language allows it)."),
    ("E0013", "A missing expression, such as `x = ` or a trailing operator. Complete the expression."),
    ("E0014", "An assignment to something that is not a name or a subscript of a name, such as `f(x) = y` or `a + b = c`. Assign to a name (`t = ...`) or into a tile (`t[...] = ...`)."),
    ("E0015", "A positional argument after a keyword argument, such as `nl.load(x, dtype=d, y)`. Python requires every positional argument first."),
    ("E0016", "Python syntax that the kernel language does not have (strings other than the few keyword values it knows, `**`, `==` outside the places it is allowed, `lambda`, classes, ...). The message names it; rewrite with the operations the language has (see the language reference in docs/)."),
    ("E0017", "A NUL byte in the source, even in a comment. CPython rejects every such file, so nkc does too: remove the byte (often a file that was saved in another encoding)."),
    ("E0018", "A backslash continuation that ends the file: the last logical line never ends. CPython reports an unexpected end of file; remove the backslash or finish the line."),
    ("E0050", "A syntax error in Penguin IR text (a `.pir` file). The label points at the line and column where the reader stopped. `.pir` files are best written by `nkc compile --emit penguin` and edited by hand with care."),
    ("E0051", "Penguin IR text that reads but breaks an invariant of the IR, reported by its verifier (the notes list each violation): for example an instruction that uses a tensor before it is defined, a loop whose bounds are not integers, a tensor larger than its memory, or an instruction that certainly reads an element nothing wrote before it, in any iteration and through any ring slot (`t{k - 1}` before slot `k - 1` was written) (the error points at that instruction and names the element)."),
    ("E0100", "A name that is bound nowhere: not a parameter, not assigned before this point, not a loop variable, not a module-level constant. Check its spelling (the help suggests a close name when there is one) and that it is bound before it is used."),
    ("E0101", "A name bound inside a hardware loop body and used after the loop, whose value is not the same in every iteration. The body is traced once, as NKI does, so a name it binds to a loop-independent value (a compile-time number, an index vector, an affine expression of the enclosing loops) stays bound after the loop; the loop's variable, a value computed from it, and a tile the body allocates (one per iteration) do not. For a tile, bind it before the loop (for example with `nl.ndarray` or `nl.zeros`) and write into it inside; for a value of the index, compute it again after the loop."),
    ("E0102", "An assignment to a kernel parameter. Parameters are the kernel's HBM inputs and cannot be rebound; bind a new name instead."),
    ("E0103", "An assignment to a loop variable. The loop's induction variable takes each value of the range in turn and cannot be rebound; use another name."),
    ("E0104", "Binding a reserved name: `nl`, `nisa`, `range` and the other names the language gives a meaning. Choose another name."),
    ("E0105", "Binding a name to a value of another kind than it had: a compile-time integer name to a tile, or a tile name to an integer. A name keeps one kind in a kernel; use a second name."),
    ("E0106", "A loop variable that reuses a name already bound. Loop variables must be fresh, so that every index says which loop it follows."),
    ("E0107", "Two parameters of one kernel with the same name. Python rejects this too; rename one."),
    ("E0108", "Two kernels with the same name in one file. `--kernel NAME` could not choose between them; rename one."),
    ("E0110", "`nl.foo` or `nisa.foo` that is not an operation nkc knows. The help names a close one when there is one; the language reference in docs/ lists the operations nkc supports."),
    ("E0111", "A call of something that is not an operation or a builtin nkc knows, such as a tile or a parameter. Only `nl.*`, `nisa.*`, the range calls and a few builtins can be called."),
    ("E0112", "A keyword argument that the operation does not take. The message lists the keywords it takes; check the spelling."),
    ("E0113", "A required argument of the operation is missing. The message names it; pass it positionally or by keyword."),
    ("E0114", "An argument given twice (positionally and by keyword, or by the same keyword twice). Give it once."),
    ("E0115", "More positional arguments than the operation takes. Remove the extra ones, or pass optional ones by keyword."),
    ("E0116", "An argument of the wrong kind: a tile where a compile-time integer is needed, an integer where a tile is needed, a dtype where a memory is needed, and so on. The message says what the operation expects."),
    ("E0117", "A call whose result is discarded (an operation that returns a tile used as a statement), or `nl.store` used as a value. Bind the result to a name, or call `nl.store` as a statement."),
    ("E0120", "Something that must be a compile-time integer is not, or depends on a loop variable where a constant is needed (a tile shape, a range bound, a slice size). Compute it from constants, parameters' shapes and module-level integers only."),
    ("E0121", "Division or modulo by zero in compile-time arithmetic. Check the divisor, which may come from a shape."),
    ("E0122", "`/` between integers. Python's `/` gives a float; indices and shapes need integers: use `//`."),
    ("E0123", "Integer overflow in compile-time arithmetic: a result beyond 64-bit signed integers. Shapes and indices are far smaller; check the expression."),
    ("E0124", "`x.shape[k]` with a `k` out of range, or `.shape` of something that is not a tensor. A tensor of `n` dimensions has `x.shape[0]` to `x.shape[n - 1]`."),
    ("E0125", "An index expression that is not affine in the loop variables, such as `i * j` or `i % 4`. Indices must be sums of loop variables times constants plus a constant, so that the pipeliner's legality check can reason about them. The same code marks an index-vector expression or `.ap(...)` that is not an access pattern nkc lowers: a strided or multi-axis partition index (the partition axis is never strided), a negative step, two vectors on one grid axis, more than 4 free axes."),
    ("E0126", "A loop variable's coefficient in an index larger than 2^24 in magnitude: only a loop of one iteration could keep such an index inside its tensor. Check the index."),
    ("E0127", "An indirect subscript nkc does not lower. A load or store may index the rows of an HBM tensor with the values of an on-chip integer tile (`nl.load(t[idx[i_p, 0], i_f])`, NKI's gather; `nl.store(t[idx, i_f], value=v)`, its scatter), with one index per partition: the index tile is `[P, 1]`, and it indexes the dimension just before the last (the rows of the stored tensor; leading dimensions are plain indices). Select one column of the index tile (`idx[i_p, 0]`), and index an on-chip tile by affine indices only."),
    ("E0130", "A subscript with the wrong number of indices: an on-chip tile takes two (partition, free), an HBM tensor one per dimension."),
    ("E0131", "A slice whose size depends on a loop variable. Every tile has a fixed size: slice `t[i * 128:(i + 1) * 128]`, whose size is the constant 128."),
    ("E0132", "A slice of size zero or less, such as `t[4:4]` or `t[8:4]`. Tiles are never empty."),
    ("E0133", "A slice that leaves its tensor in some iteration of the loops around it. The message names the iteration and the bound; fix the range or the slice."),
    ("E0134", "A subscript of something that is not a tensor, such as an integer. Only tensors and tiles can be subscripted."),
    ("E0140", "An on-chip tile with more than 128 partitions (its first dimension). SBUF and PSUM have 128 partitions: tile the data in pieces of at most 128 rows and loop over them."),
    ("E0141", "A PSUM tile larger than one 2 KiB bank per partition (512 float32 values), or a PSUM array of several blocks larger than the PSUM (8 banks) whose blocks are live at once. Split the matmul's free dimension into pieces of at most 512 columns; an array of blocks fits when each block is written and read within one iteration of the loop that indexes it (its blocks then share storage)."),
    ("E0142", "PSUM written by an instruction that cannot write it: a load, an iota or a statistics operation (PSUM is written by matmuls and transposes, and by the elementwise operations, activations, reductions, copies and memsets of the Vector and Scalar engines; GpSimd cannot access it). Compute into SBUF instead."),
    ("E0143", "An HBM tensor given directly to a compute operation. Engines read on-chip memory only: `nl.load` the data into SBUF first."),
    ("E0144", "`nl.load` from something that is not in HBM. Loads move HBM data on chip; an on-chip tile is used as it is (or copied with `nl.copy`)."),
    ("E0145", "`nl.store` into something that is not a writable HBM array: on-chip tiles are written by assignment, and a parameter the kernel stores into is an output (NKI's output-parameter style), so the kernel may not also read it, since nkc does not pass its contents on entry through. Store into an `nl.ndarray(..., buffer=nl.shared_hbm)` that the kernel returns, or into a parameter the kernel does not read."),
    ("E0146", "`nl.store` of a value that is not in SBUF, such as a PSUM matmul result. Copy it to SBUF first (`nl.copy`) and store that."),
    ("E0147", "A Tensor-engine operand (of a matmul or transpose) that is not in SBUF. Load or copy the operand into SBUF."),
    ("E0148", "Writing an HBM array other than with `nl.store` (an assignment into it, `+=`, an operation's `dst=`). HBM is written by DMA only: use `nl.store`."),
    ("E0149", "A `buffer=` that is not a memory (`nl.sbuf`, `nl.psum`, `nl.hbm`, `nl.shared_hbm`)."),
    ("E0150", "Matmul operands whose contraction dimensions differ. `nl.matmul(x, y, transpose_x=True)` contracts the partition dimension of both: `x` is `[K, M]`, `y` is `[K, N]`, the result `[M, N]`."),
    ("E0151", "Matmul dimensions over the Tensor engine's limits: the contraction dimension and `M` at most 128 (partitions), `N` at most 512 (one PSUM bank of float32). Tile the matmul and accumulate with `+=`."),
    ("E0152", "Transpose dimensions over the Tensor engine's limits (at most 128 × 128 per transpose). Transpose tile by tile."),
    ("E0153", "Elementwise operands of incompatible shapes. Both must have the same shape, or one must broadcast along its free dimension (`[P, 1]`)."),
    ("E0154", "A reduction along another axis than the free one (axis 1). Engines reduce within a partition; to reduce across partitions, transpose first or use a matmul with a ones vector."),
    ("E0155", "`nisa.activation(op=...)` with something that is not an activation function (`nl.exp`, `nl.tanh`, `nl.copy`, ...)."),
    ("E0156", "An activation's scale or bias tile that is not `[P, 1]` (one value per partition, broadcast along the free dimension)."),
    ("E0157", "`nl.store` of a value whose shape differs from the destination slice. The message gives both shapes; slice the destination to the value's shape."),
    ("E0158", "An assignment into a tile (a slice assignment or `+=`) of a value of another shape. The value must have the shape of the slice it is written into."),
    ("E0159", "`nl.matmul(x, y)` without `transpose_x=True` whose `x` is larger than 128 x 128. The Tensor engine contracts over partitions, so it takes the left operand transposed (`[K, M]`); without `transpose_x=True`, x is `[M, K]` and nkc transposes it on the Tensor engine first, as NKI does, which takes at most 128 rows and 128 columns. Pass x transposed with `transpose_x=True`, or split the matmul into blocks."),
    ("E0160", "A scalar where a tile is needed: both operands of an elementwise operation are scalars, or a scalar is given to an operation that takes tiles only."),
    ("E0161", "An in-place update of a tuple of names (`a, b += x`): update each name on its own line. (An update of a PSUM tile is an accumulating matmul for `acc += nl.matmul(...)`, and an elementwise read-modify-write on the Vector engine otherwise.)"),
    ("E0162", "A Tensor-engine result accumulated into SBUF. Matmul and transpose results go to PSUM; an assignment `sbuf_tile[...] = nisa.nc_transpose(...)` is compiled as the Tensor-engine op into a PSUM temporary plus an implicit copy into SBUF, but accumulation happens in PSUM only: accumulate into a `buffer=nl.psum` tile, then copy to SBUF."),
    ("E0167", "An `engine=` that the machine cannot run this instruction on (or a value that is not an engine). The message names the engines that can run it: pick one of them, or drop `engine=` and let nkc choose."),
    ("E0170", "A dtype other than `nl.float32` or `nl.bfloat16`, the two the machine model has."),
    ("E0171", "`nl.bfloat16` in PSUM. PSUM accumulates in float32: keep PSUM tiles float32 and convert when copying to SBUF."),
    ("E0172", "A shape that is not a tuple of positive compile-time integers, or a dimension over 2^24."),
    ("E0173", "The kernel's HBM arrays (parameters and `nl.shared_hbm` arrays together) hold more than 2^30 elements, more than the simulator and the interpreter hold (4 GiB of float32). Run a smaller problem."),
    ("E0174", "An SBUF tile larger than one partition's 192 KiB. Split it along the free dimension."),
    ("E0180", "A pipelining keyword with a value of the wrong type or range: `num_stages` must be a positive integer or `\"auto\"`, `stage_id` and `execution_order` non-negative integers, `multi_buffer` at least 1 (each at most 2^32 − 1)."),
    ("E0181", "A loop keyword (`num_stages`) on a call that is not a range call. It belongs on the loop: `for i in nl.affine_range(n, num_stages=2):`."),
    ("E0182", "`stage_id` or `execution_order` on a call nested inside an expression. They belong on the statement's outermost call."),
    ("E0183", "`stage_id` or `execution_order` on a statement that is not directly in a loop body. Stages are parts of one loop's body."),
    ("E0190", "A kernel with no `return` that stores into none of its parameters: it has no output. A kernel returns the HBM arrays it writes (end it with `return out`), or stores into parameters that are its outputs (`nl.store(b_tensor[...], value=t)`)."),
    ("E0191", "`return` of something that is not an `nl.shared_hbm` array made by the kernel. Return the arrays it stores into."),
    ("E0192", "`return` somewhere other than the end of the kernel body. nkc takes one `return`, at the end."),
    ("E0193", "A parameter annotation other than `nl.hbm[DTYPE, DIM, ...]`. Annotate it so, or leave it unannotated (shape-generic: `--shape` or `--input` gives its shape)."),
    ("E0194", "A `for` whose iterator is not a range call (`range`, `nl.affine_range`, `nl.sequential_range`, `nl.static_range`)."),
    ("E0195", "A loop with fewer than one iteration (or more than 2^24). Check the range's bounds."),
    ("E0196", "A module-level statement that is not a compile-time integer binding (`N = 128`), an import or a kernel. Move the code into the kernel."),
    ("E0197", "`--kernel NAME` names no kernel of the file. The help suggests a close name, and the note lists the kernels the file defines. `--kernel EXPR` (a factory's call, `make_kernel(128)[0]`) that is not a Python expression, or whose value is not a function, is E0197 too."),
    ("E0198", "A file with no kernel, or with several and none chosen. Define a kernel, or choose one with `--kernel NAME`."),
    ("E0199", "A construct the language does not have (a float binding, `//` on tiles, a `while` loop, ...). The message says which; rewrite with what the language has."),
    ("E0200", "The same array returned twice. Return each output once."),
    ("E0201", "Rebinding, inside a loop body, a name bound outside the loop. Each iteration would see another value: write into the outer tile (`t[...] = ...`) or bind a new name inside."),
    ("E0202", "A loop bound (start or stop) beyond ±2^24."),
    ("E0203", "An `assert` whose compile-time condition is false, for the shapes this run gives. Check the shapes given with `--shape` or `--input`."),
    ("E0204", "An `if` or `assert` condition, or a scalar parameter's default, that is not a compile-time value (it depends on tile data or a loop variable). Conditions must be known when the kernel is compiled."),
    ("E0205", "A parameter without a type whose shape the run does not give. Untyped parameters are shape-generic: give the shape with `--shape NAME=ROWSxCOLS` or an array with `--input NAME=FILE.npy` (any command), or annotate the parameter `nl.hbm[nl.float32, ROWS, COLS]`."),
    ("E0206", "A `mask=` nkc cannot lower: not a comparison of index expressions, a comparison of two index vectors (a diagonal), `!=` on an index vector, or a mask on an operation whose elements do not map one to one onto its tile (matmul, transpose, iota). A mask keeps a box of the tile: bound each index vector with `<`, `<=`, `>`, `>=` or `==` against an affine expression, and join bounds with `&`: `mask=(i * 128 + i_p < n) & (i_f < d)`. A comparison of a flattened row-major offset (`512 * i_p + i_f < n`, with `i_f` of at most 512 elements and loop steps of the bound multiples of 512) is covered too, by disjoint boxes (full rows, then one partial row); other sums of index vectors are refused. A bound on a free axis of a tile of more than 2 axes is a bound on the folded free index, or one box per index of the axes before it (at most 8 boxes). A comparison of loop indices alone (`mask=(i * 128 < n)`) runs the call whole or not at all in each iteration."),
    ("E0210", "A Python error while the kernel's Python runs at compile time, as NKI's tracer runs it: an index out of range, a missing key, a call with the wrong arguments, a division by zero, an operation on the wrong types, or a failed `assert` (its message is shown). Evaluation of the kernel stops there, as Python would, so the errors the assert guarded are not reported."),
    ("E0211", "Evaluation that does not end: helper calls nested too deep (recursion), or too many statements and loop iterations run at compile time (such as `while True:`). Bound the loop, or use an `nl.affine_range` hardware loop instead of a Python loop over a large range."),
    ("E0212", "Python that needs the value of a hardware loop's index inside `nl.affine_range` / `nl.sequential_range`: the index exists only on the device. An `if` on an affine condition of the indices (`if i * 128 >= j * 512:`, joined with `&`) is accepted: its body runs, guarded, only in the iterations where the condition holds, and `else` where it does not. E0212 reports what such a guarded `if` cannot do: `while` on the condition; `break`, `continue` or `return` inside a guarded branch (guard the rest of the body instead); an `else` whose negated condition needs more than 8 disjoint pieces (nest `if`s instead); and an operation that reads a tile created in a guarded branch outside that condition (read it inside the `if`, or create the tile before the `if`). Any other use of the value (an f-string, `range(i)`, `and`/`or`, a list index) is E0212 too: select elements with `mask=`, pass a condition of the loop indices as `mask=` (`mask=(i * 128 >= j * 512)`), or iterate `nl.static_range(...)` to run the Python once per value."),
    ("E0213", "A scalar kernel parameter with no default and no value from the command line. Give it one with `--arg NAME=VALUE` (a Python literal: `1e-5`, `128`, `True`, `(2, 4)`)."),
    ("E0214", "Python that nkc does not evaluate inside a kernel: `with`, `try`, a class decorator other than `@dataclass`, or a builtin or method it does not have. At module level such statements are skipped; inside a kernel, rewrite with the constructs docs/language.md lists."),
    ("E0215", "The kernel's Python ran a `raise` at compile time (`raise ValueError(f\"unsupported dtype: {dtype}\")`), as NKI's tracer would stop with that exception. The message is the exception's. Change the arguments, shapes or dtypes of the run so that the condition that raises does not hold, or the code that raises."),
    ("E0230", "A tile shape nkc cannot hold: two `nl.par_dim` dimensions, or more bytes in a partition than SBUF has. Mark one partition dimension, and split the tile."),
    ("E0231", "Retired: a subscript of a tile of more than two dimensions that selects elements that are not contiguous in a partition. Such a subscript is an access pattern now (a window, a strided view); the code is no longer reported and is not reused."),
    ("E0232", "`x.reshape(shape)` to a shape with another number of elements. The new shape must hold exactly the elements of the old one (one dimension may be -1)."),
    ("E0233", "A `reshape` nkc cannot express as a view: of an on-chip tile, or one that changes the length of the rows of the stored HBM array. Keep the last dimension, or index the tensor as it is."),
    ("E0260", "`nl.program_id` or `nl.num_programs` in a kernel run without a launch grid. NKI launches such a kernel as a grid of programs (`kernel[2, 4](a, b)`); nkc needs the same grid from the run: `--grid 2x4` (one extent per axis), accepted by `run`, `check`, `compile`, `compare` and `suggest`. The programs run one after the other, as affine loops around the kernel's body."),
    ("E0261", "`nl.program_id(axis)` or `nl.num_programs(axis)` with an axis the launch grid does not have: a grid `--grid 2x4` has axes 0 and 1. Give the run one extent per axis the kernel uses."),
    ("E0262", "An access to a PSUM array of several banks that may cross from one bank into the next. PSUM is 8 banks of 2 KiB per partition (512 float32), an array larger than a bank is stored bank after bank, and one instruction reaches one bank. Index the array by whole blocks that start at a multiple of the bank (`qk[i, j, :, :]` of a `(4, 1, nl.par_dim(128), 512)` array)."),
    ("E0401", "Retired: a pipelining annotation on a loop nested inside a pipelined loop. Nested pipelining is supported now; the code is no longer reported and is not reused."),
    ("E0402", "A pipelined loop whose bounds are not canonical: it must start at 0 with step 1. Shift the index in the body instead (`i + start`)."),
    ("E0403", "`num_stages` and `stage_id` on the same loop. Mode A (`num_stages` on the loop) and Mode B (`stage_id` on each statement) are exclusive: keep one."),
    ("E0404", "Mode A with more stages than the loop body has statements. Each stage needs at least one statement: lower `num_stages`."),
    ("E0405", "Mode B: a statement of the loop body without `stage_id`. In Mode B every statement says its stage."),
    ("E0406", "Mode B: the stage ids leave a gap. They must be `0..N-1`, each used."),
    ("E0407", "Mode B: a stage id smaller than the one before it in program order. Stages are non-decreasing along the body; reorder the statements or the ids."),
    ("E0408", "`execution_order` on some statements of the body but not all. Give it to every statement, or to none."),
    ("E0409", "The execution orders are not a permutation of `0..n-1`."),
    ("E0410", "The execution orders decrease in program order within one stage. Within a stage, statements run in program order."),
    ("E0411", "`execution_order` in a Mode A loop (without `stage_id`). Execution orders reorder Mode B stages."),
    ("E0420", "`multi_buffer` on a tile that the pipeliner also buffers automatically. Remove `multi_buffer`, or the annotation that makes the tile cross stages."),
    ("E0421", "The loop's SBUF tensors do not fit in SBUF once the pipeliner widens them for the stages in flight. Use fewer stages, smaller tiles or `multi_buffer` lower."),
    ("E0422", "More PSUM banks in flight in the pipelined loop than the 8 PSUM has. Use fewer stages or smaller PSUM tiles."),
    ("E0430", "The pipelined schedule would reverse a dependence of the program as written: a value would be read before it is written, or overwritten before it is read. The notes name the statements and iterations; change the stages (`nkc suggest` finds legal ones), or use `--no-legality-check` at your own risk."),
    ("E0440", "`--peel`: the prologue and epilogue copies would hold more than 65,536 instructions. Use the predicated form (no `--peel`) or fewer stages."),
    ("E0499", "An internal error of the pipeliner: a bug in nkc, not in the kernel. Please report it with the kernel."),
    ("E0501", "The kernel's SBUF buffers, after allocation, need more bytes per partition than SBUF has (192 KiB). The notes list every buffer and its bytes; use smaller tiles or fewer stages."),
    ("E0502", "More PSUM banks are needed at once than the 8 PSUM has. The notes list the tiles; accumulate into fewer or smaller PSUM tiles."),
    ("E0503", "A PSUM tensor larger than the PSUM: 8 banks of 2 KiB per partition. An array of several banks is placed in whole contiguous banks, and each access to it stays within one bank."),
    ("E0504", "Something the backend does not lower yet (the message says which: a multi-buffered HBM scratch tensor, loops nested deeper than the registers, ...). Rewrite that part of the kernel."),
    ("E0599", "An internal error of the backend: a bug in nkc, not in the kernel. Please report it with the kernel."),
    ("E0900", "The kernel stores undefined values into HBM (an output or HBM scratch): elements that nothing wrote (part of an `nl.ndarray`, on chip or HBM scratch, read before it is written), or values computed from them. Reading such elements is allowed — rows a masked load skipped may be squared, summed and scaled with the rest of the tile — but they must not reach HBM: store only what was computed from written memory (e.g. give the store the same mask as the load), or write every element first (make the tile with `nl.zeros`). `nkc check` also reports reads of HBM scratch that certainly find nothing written."),
    ("E0901", "The kernel's (or program's) HBM tensors hold more elements than `nkc run` and `nkc sim` hold (2^30, 4 GiB of float32). Run a smaller problem."),
    ("E0902", "The run passed `--max-cycles` (simulated cycles, or instructions executed; for the interpreter, the kernel's instruction instances). The label shows the loop that runs most often. Raise the limit with `--max-cycles N` (on `run`, `sim`, `compare` and `suggest`) if the kernel is meant to run this long."),
    ("E0903", "An indirect load or store (NKI's gather or scatter: `nl.load(t[idx[i_p, 0], i_f])`, `nl.store(t[idx, i_f], value=v)`) met an index that is not an integer row of the dimension it indexes, found when the kernel ran (by the interpreter and the simulator alike). The note names the partition of the index tile and its value. Give the index tensor values in range, or clamp the indices on chip (`nl.minimum`, `nl.maximum`) before the access."),
];

/// The explanation of `code` (as [`normalise`] writes it), if it is a code of nkc.
pub fn explain(code: &str) -> Option<&'static str> {
    EXPLANATIONS
        .binary_search_by(|(c, _)| (*c).cmp(code))
        .ok()
        .map(|i| EXPLANATIONS[i].1)
}

/// A code as the user may type it (`e205`, `0205`, `205`, ` E0205 `) in the form the tables use
/// (`E0205`); anything else unchanged but trimmed.
pub fn normalise(code: &str) -> String {
    let t = code.trim();
    let digits = t.strip_prefix(['E', 'e']).unwrap_or(t);
    if !digits.is_empty() && digits.len() <= 4 && digits.bytes().all(|b| b.is_ascii_digit()) {
        format!("E{digits:0>4}")
    } else {
        t.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `"Ennnn"` string constant of a table of codes.
    fn codes_in(source: &str) -> Vec<String> {
        source
            .lines()
            .filter(|l| l.trim_start().starts_with("pub const") && l.contains(": &str = \"E"))
            .filter_map(|l| l.split('"').nth(1).map(str::to_string))
            .collect()
    }

    #[test]
    fn every_code_of_every_table_is_explained_once_in_order() {
        let tables = [
            include_str!("codes.rs"),
            include_str!("../../penguin/src/pipeline/codes.rs"),
            include_str!("../../backend/src/error.rs"),
        ];
        let codes: Vec<String> = tables.iter().flat_map(|t| codes_in(t)).collect();
        assert!(codes.len() > 100, "found only {} codes", codes.len());
        for c in &codes {
            assert!(explain(c).is_some(), "{c} has no explanation in explain.rs");
        }
        assert!(
            EXPLANATIONS.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted, once each"
        );
        for (c, text) in EXPLANATIONS {
            assert!(
                codes.iter().any(|k| k == c),
                "{c} is explained but defined nowhere"
            );
            assert!(text.len() > 40, "{c}: a real explanation");
        }
    }

    #[test]
    fn codes_are_normalised_as_users_type_them() {
        assert_eq!(normalise("E0205"), "E0205");
        assert_eq!(normalise("e205"), "E0205");
        assert_eq!(normalise(" 205 "), "E0205");
        assert_eq!(normalise("nope"), "nope");
        assert!(explain(&normalise("e430")).unwrap().contains("dependence"));
    }
}
