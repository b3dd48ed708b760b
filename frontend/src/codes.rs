//! Every diagnostic code of the front end, in one place.
//!
//! The codes are stable: tests and the `tests/ui` corpus name them. A code is never reused for a
//! different problem.
//!
//! | range | owner |
//! | --- | --- |
//! | `E0001`–`E0099` | syntax: the lexer (`lexer.rs`) and the parser (`parser.rs`) |
//! | `E0100`–`E0399` | semantic checks (`check/`) and lowering; each constant below says what it means |
//! | `E0400`–`E0499` | the annotated software pipeliner and its legality check; defined in penguin (`penguin::pipeline::codes`), which does not depend on the front end |
//! | `E0900`–`E0999` | problems found by running a kernel (`nkc run`), reported at the statement; `nkc check` reports them too where it can see them statically |
//!
//! Syntax codes:
//!
//! | code | problem |
//! | --- | --- |
//! | `E0001` | a character that cannot start a token |
//! | `E0002` | a tab in the indentation of a line |
//! | `E0003` | a dedent to a column that matches no enclosing block |
//! | `E0004` | an indented line where no block was opened |
//! | `E0005` | an unclosed `(` or `[` |
//! | `E0006` | a closing bracket that does not match the open one |
//! | `E0007` | an integer literal that does not fit in 64 bits |
//! | `E0008` | brackets or blocks nested too deeply |
//! | `E0009` | a malformed number literal |
//! | `E0010` | an unexpected token (the general syntax error) |
//! | `E0011` | a missing `:` after a `def` or `for` header |
//! | `E0012` | a missing indented block after a header |
//! | `E0013` | a missing expression |
//! | `E0014` | an assignment to something that is not a name or a subscript of a name |
//! | `E0015` | a positional argument after a keyword argument |
//! | `E0016` | syntax that Python has but the kernel language does not (strings, `**`, `==`, ...) |
//! | `E0017` | a NUL byte in the source (Python rejects every such file) |
//! | `E0018` | a backslash continuation that ends the file (Python: unexpected end of file) |
//! | `E0050` | a syntax error in Penguin IR text (a `.pir` file given to `nkc`) |
//! | `E0051` | Penguin IR text that reads but breaks an invariant of the IR (its verifier) |

/// A character that cannot start a token.
pub const BAD_CHARACTER: &str = "E0001";
/// A tab in the indentation of a line.
pub const TAB_INDENT: &str = "E0002";
/// A dedent to a column that matches no enclosing block.
pub const BAD_DEDENT: &str = "E0003";
/// An indented line where no block was opened.
pub const UNEXPECTED_INDENT: &str = "E0004";
/// An unclosed `(` or `[`.
pub const UNCLOSED_BRACKET: &str = "E0005";
/// A closing bracket that does not match the open one.
pub const MISMATCHED_BRACKET: &str = "E0006";
/// An integer literal that does not fit in 64 bits.
pub const INT_OVERFLOW: &str = "E0007";
/// Brackets or blocks nested too deeply.
pub const TOO_DEEP: &str = "E0008";
/// A malformed number literal.
pub const BAD_NUMBER: &str = "E0009";
/// An unexpected token: the general syntax error.
pub const UNEXPECTED_TOKEN: &str = "E0010";
/// A missing `:` after a `def` or `for` header.
pub const MISSING_COLON: &str = "E0011";
/// A missing indented block after a header.
pub const EXPECTED_BLOCK: &str = "E0012";
/// A missing expression.
pub const EXPECTED_EXPR: &str = "E0013";
/// An assignment to something that is not a name or a subscript of a name.
pub const BAD_TARGET: &str = "E0014";
/// A positional argument after a keyword argument.
pub const POSITIONAL_AFTER_KEYWORD: &str = "E0015";
/// Python syntax that the kernel language does not have.
pub const UNSUPPORTED_SYNTAX: &str = "E0016";
/// A NUL byte anywhere in the source, comments included (CPython rejects the file).
pub const NUL_BYTE: &str = "E0017";
/// A backslash continuation with nothing after it: the file ends inside a logical line.
pub const CONTINUATION_AT_EOF: &str = "E0018";
/// A syntax error in Penguin IR text (a `.pir` file given to `nkc`).
pub const PENGUIN_SYNTAX: &str = "E0050";
/// Penguin IR text that reads but breaks an invariant of the IR (its verifier).
pub const PENGUIN_INVALID: &str = "E0051";

// Semantic checks: E0100 and up, below this line.

// ---- Semantic checks: names and bindings (E0100–E0109) ----
/// A name that is bound nowhere.
pub const UNDEFINED_NAME: &str = "E0100";
/// A name bound inside a loop body, used after the loop.
pub const OUT_OF_SCOPE: &str = "E0101";
/// Assigning to a kernel parameter.
pub const ASSIGN_TO_PARAM: &str = "E0102";
/// Assigning to a loop variable.
pub const ASSIGN_TO_LOOP_VAR: &str = "E0103";
/// Binding a reserved name (`nl`, `nisa`, `range`).
pub const RESERVED_NAME: &str = "E0104";
/// Binding a compile-time integer name to a tile, or a tile name to an integer.
pub const KIND_CHANGE: &str = "E0105";
/// A loop variable that reuses a name already bound.
pub const LOOP_VAR_SHADOWS: &str = "E0106";
/// Two parameters of one kernel with the same name.
pub const DUPLICATE_PARAM: &str = "E0107";
/// Two kernels with the same name.
pub const DUPLICATE_KERNEL: &str = "E0108";

// ---- Calls and arguments (E0110–E0119) ----
/// `nl.foo` / `nisa.foo` that is not a known operation.
pub const UNKNOWN_OP: &str = "E0110";
/// A call of something that is not an operation.
pub const NOT_CALLABLE: &str = "E0111";
/// A keyword argument the operation does not take.
pub const UNKNOWN_KEYWORD: &str = "E0112";
/// A required argument that is missing.
pub const MISSING_ARGUMENT: &str = "E0113";
/// An argument given twice.
pub const DUPLICATE_ARGUMENT: &str = "E0114";
/// More positional arguments than the operation takes.
pub const TOO_MANY_ARGUMENTS: &str = "E0115";
/// An argument of the wrong kind (a tile where an integer is needed, and so on).
pub const WRONG_ARGUMENT_KIND: &str = "E0116";
/// A call whose result is discarded, or `nl.store` used as a value.
pub const UNUSED_OR_VOID: &str = "E0117";

// ---- Compile-time integers and index arithmetic (E0120–E0129) ----
/// Something that is not an integer where one is needed, or that depends on a loop variable
/// where a compile-time constant is needed.
pub const NOT_CONST_INT: &str = "E0120";
/// Division or modulo by zero.
pub const DIVISION_BY_ZERO: &str = "E0121";
/// `/` between integers.
pub const INT_TRUE_DIVISION: &str = "E0122";
/// Integer overflow in compile-time arithmetic.
pub const CONST_OVERFLOW: &str = "E0123";
/// `x.shape[k]` with a bad `k`, or `.shape` of something that is not a tensor.
pub const BAD_SHAPE_ACCESS: &str = "E0124";
/// An index expression that is not affine in the loop variables.
pub const NOT_AFFINE: &str = "E0125";
/// A loop variable's coefficient in an index larger than 2^24 in magnitude (only a loop of one
/// iteration can keep such an index inside its tensor).
pub const INDEX_COEFF_RANGE: &str = "E0126";
/// An indirect subscript (a tile's values as the row index of an HBM tensor) nkc does not lower:
/// an index tile of more than one column, on an axis other than the rows of the stored tensor,
/// two index tiles, or an indirect subscript of an on-chip tile.
pub const INDIRECT_INDEX: &str = "E0127";

// ---- Slices (E0130–E0139) ----
/// A subscript with other than two indices.
pub const WRONG_INDEX_COUNT: &str = "E0130";
/// A slice whose size depends on a loop variable.
pub const SLICE_SIZE_NOT_CONST: &str = "E0131";
/// A slice of size zero or less.
pub const EMPTY_SLICE: &str = "E0132";
/// A slice that leaves its tensor in some iteration.
pub const SLICE_OUT_OF_BOUNDS: &str = "E0133";
/// A subscript of something that is not a tensor.
pub const NOT_SUBSCRIPTABLE: &str = "E0134";

// ---- Memories and engines (E0140–E0149) ----
/// An on-chip tile with more than 128 partitions.
pub const TOO_MANY_PARTITIONS: &str = "E0140";
/// A PSUM tile larger than one 2 KiB bank per partition.
pub const PSUM_TOO_LARGE: &str = "E0141";
/// PSUM written by something other than a Tensor-engine result or `nl.zeros`.
pub const PSUM_WRITE: &str = "E0142";
/// An HBM operand to a compute operation.
pub const HBM_OPERAND: &str = "E0143";
/// `nl.load` from something that is not in HBM.
pub const LOAD_NOT_HBM: &str = "E0144";
/// `nl.store` into something that is not a writable HBM array.
pub const STORE_DST: &str = "E0145";
/// `nl.store` of a value that is not in SBUF.
pub const STORE_VALUE_NOT_SBUF: &str = "E0146";
/// A Tensor-engine operand that is not in SBUF.
pub const TENSOR_ENGINE_OPERAND: &str = "E0147";
/// Writing an HBM array other than with `nl.store`.
pub const HBM_WRITE: &str = "E0148";
/// A `buffer=` that is not a memory.
pub const BAD_BUFFER: &str = "E0149";

// ---- Operation shapes (E0150–E0169) ----
/// Matmul operands whose contraction dimensions differ.
pub const MATMUL_SHAPE: &str = "E0150";
/// Matmul dimensions over the Tensor engine's limits.
pub const MATMUL_LIMIT: &str = "E0151";
/// Transpose dimensions over the limits.
pub const TRANSPOSE_LIMIT: &str = "E0152";
/// Elementwise operands of incompatible shapes.
pub const ELEMENTWISE_SHAPE: &str = "E0153";
/// A reduction along another axis than 1.
pub const REDUCE_AXIS: &str = "E0154";
/// `nisa.activation(op=...)` that is not an activation function.
pub const ACTIVATION_FUNC: &str = "E0155";
/// A scale or bias tile that is not `[P, 1]`.
pub const ACTIVATION_OPERAND: &str = "E0156";
/// `nl.store` of a value whose shape differs from the destination slice.
pub const STORE_SHAPE: &str = "E0157";
/// An assignment into a tile (slice assignment, `+=`) of a value of another shape.
pub const ASSIGN_SHAPE: &str = "E0158";
/// `nl.matmul` without `transpose_x=True`.
pub const MATMUL_NEEDS_TRANSPOSE_X: &str = "E0159";
/// A scalar where a tile is needed (both operands scalars, a scalar to a tile-only operation).
pub const SCALAR_OPERAND: &str = "E0160";
/// An in-place update that the target memory does not support (`-=` on PSUM, `+=` of a transpose).
pub const BAD_UPDATE: &str = "E0161";
/// A Tensor-engine result written into SBUF.
pub const TENSOR_ENGINE_DST: &str = "E0162";
/// `engine=` naming an engine that does not run the instruction on this machine, or no engine.
pub const ENGINE_NOT_HERE: &str = "E0167";

// ---- Types and shapes of buffers (E0170–E0179) ----
/// A dtype other than `nl.float32` / `nl.bfloat16`.
pub const UNSUPPORTED_DTYPE: &str = "E0170";
/// `nl.bfloat16` in PSUM.
pub const BF16_IN_PSUM: &str = "E0171";
/// A shape that is not a pair of positive compile-time integers.
pub const BAD_SHAPE: &str = "E0172";
/// The HBM arrays of a kernel (parameters and `nl.shared_hbm` arrays) hold more than 2^27
/// elements in all, more than the simulator and the interpreter hold.
pub const HBM_TOO_LARGE: &str = "E0173";
/// An SBUF tile larger than one partition's 192 KiB.
pub const SBUF_TILE_TOO_LARGE: &str = "E0174";

// ---- Pipelining annotations (E0180–E0189) ----
/// An annotation keyword with a value of the wrong type or range.
pub const BAD_ANNOTATION_VALUE: &str = "E0180";
/// A loop keyword on a call that is not a range call.
pub const LOOP_KEYWORD_MISPLACED: &str = "E0181";
/// `stage_id` / `execution_order` on a nested call.
pub const STMT_KEYWORD_NESTED: &str = "E0182";
/// `stage_id` / `execution_order` on a statement that is not directly in a loop body.
pub const STMT_KEYWORD_NOT_IN_LOOP: &str = "E0183";

// ---- Structure (E0190–E0199, E0200–) ----
/// A kernel with no `return`.
pub const NO_RETURN: &str = "E0190";
/// `return` of something that is not an `nl.shared_hbm` array.
pub const BAD_RETURN_VALUE: &str = "E0191";
/// `return` somewhere other than the end of the kernel body.
pub const MISPLACED_RETURN: &str = "E0192";
/// A parameter with an annotation other than `nl.hbm[DTYPE, ROWS, COLS]`.
pub const BAD_PARAM_TYPE: &str = "E0193";
/// A `for` whose iterator is not a range call.
pub const BAD_LOOP_ITER: &str = "E0194";
/// A loop with fewer than one iteration.
pub const BAD_TRIP_COUNT: &str = "E0195";
/// A module-level statement that is not an integer binding.
pub const BAD_MODULE_ITEM: &str = "E0196";
/// `--kernel NAME` that names no kernel of the file.
pub const UNKNOWN_KERNEL: &str = "E0197";
/// A file with no kernel, or with several and none chosen.
pub const CHOOSE_KERNEL: &str = "E0198";
/// A construct the language does not have (a float binding, `//` on tiles, ...).
pub const UNSUPPORTED: &str = "E0199";
/// The same array returned twice.
pub const DUPLICATE_RETURN: &str = "E0200";
/// Rebinding, inside a loop body, a name bound outside the loop.
pub const REBIND_IN_LOOP: &str = "E0201";
/// A loop bound (start or stop) beyond ±2^24.
pub const LOOP_BOUND_RANGE: &str = "E0202";
/// An `assert` whose compile-time condition is false.
pub const ASSERT_FAILED: &str = "E0203";
/// An `if` or `assert` condition (or a scalar parameter's default) that is not a compile-time
/// value.
pub const NOT_CONST: &str = "E0204";
/// A parameter without a type whose shape the run does not give (`--input`, `--shape`).
pub const UNSPECIALISED_PARAM: &str = "E0205";
/// A `mask=` that nkc cannot lower: not a conjunction of bounds on index vectors, or on an
/// operation that cannot take one.
pub const PARTIAL_MASK: &str = "E0206";

// ---- tile_nd: multi-dimensional tiles, reshape, broadcast (E0230–E0239) ----
/// A tile shape nkc cannot hold: two `nl.par_dim`, or too many elements in a partition.
pub const TILE_ND_SHAPE: &str = "E0230";
/// Retired: a subscript of a multi-dimensional tile that selects elements that are not
/// contiguous in a partition. Such a subscript is an access pattern now (`check/patterns_nd.rs`);
/// the code is no longer reported and is not reused.
pub const STRIDED_SUBSCRIPT: &str = "E0231";
/// `x.reshape(shape)` to a shape of another number of elements.
pub const RESHAPE_COUNT: &str = "E0232";
/// `x.reshape(shape)` that nkc cannot express as a view: of an on-chip tile, or changing the
/// length of the rows of the stored array.
pub const RESHAPE_LAYOUT: &str = "E0233";
// ---- Python evaluated at compile time (E0210–E0219) ----
/// A Python error while the kernel's Python runs at compile time (an index out of range, a
/// missing key, a call with the wrong arguments, an operation on the wrong types).
pub const PYTHON_ERROR: &str = "E0210";
/// Evaluation that does not end: calls nested too deep, or too many steps (`while True:`).
pub const EVAL_LIMIT: &str = "E0211";
/// Python that needs the value of a hardware loop's index (`if i == 0:` in `nl.affine_range`).
pub const LOOP_INDEX_VALUE: &str = "E0212";
/// A scalar kernel parameter with no default and no `--arg`.
pub const MISSING_SCALAR_ARG: &str = "E0213";
/// Python nkc does not evaluate (a construct, a builtin or a method it does not have).
pub const PYTHON_UNSUPPORTED: &str = "E0214";
/// A `raise` the kernel's Python ran at compile time (`raise ValueError(f"...")`).
pub const RAISED: &str = "E0215";

// ---- grid: launch grid, PSUM arrays of several banks (E0260–E0269) ----
/// `nl.program_id` / `nl.num_programs` in a kernel run without a launch grid (`--grid`).
pub const NO_GRID: &str = "E0260";
/// `nl.program_id(axis)` / `nl.num_programs(axis)` with an axis the run's grid does not have.
pub const GRID_AXIS: &str = "E0261";
/// An access to a PSUM array of several banks that may cross from one bank into the next.
pub const PSUM_BANK_CROSSING: &str = "E0262";

// ---- Found at run time (E0900–) ----
/// A kernel stores undefined values into HBM: elements that nothing wrote (for example part of an
/// `nl.ndarray`, on chip or HBM scratch), or values computed from them. Found by the interpreter
/// and the simulator at the store (reading undefined elements is not an error by itself), and by
/// `nkc check` for reads of HBM scratch that certainly find nothing written.
pub const UNINITIALISED_READ: &str = "E0900";
/// A kernel (or a pseudo-ISA program) whose HBM tensors hold more elements than `nkc run` and
/// `nkc sim` hold (`runtime_sim::sim::MAX_HBM_ELEMS` over all of them), found before anything is
/// allocated.
pub const TOO_LARGE_TO_RUN: &str = "E0901";
/// A simulation that executed more cycles than `--max-cycles` allows.
pub const CYCLE_LIMIT: &str = "E0902";
/// An indirect load or store (gather, scatter) whose index tile holds a value that is not an
/// integer row of the dimension it indexes: found by the interpreter and the simulator.
pub const INDEX_OUT_OF_RANGE: &str = "E0903";
