//! [`CheckError`]: the problems the semantic checks find in the operations of a kernel (the tile
//! expressions of `ops.rs` and the `nisa` forms of `nisa.rs`).
//!
//! Each variant carries the data of one problem (names, shapes, memories, spans); its message
//! comes from `thiserror`, and `impl From<CheckError> for Diagnostic` (`error_diagnostic`) is the
//! one place where a variant gets its code (see `codes`), labels, notes and help. It sits on the
//! errors layer (`mod.rs`), above the values it names (`loop_scope::LoopExit`) and below every
//! file that reports. The checker records diagnostics
//! (`Checker::error` takes anything that converts), so the other check files, which still build
//! their diagnostics directly, and these variants report side by side, in source order.
//!
//! Invariants: every span is a byte range into the source; shapes are `[partitions, free]`.

use super::arith::MAX_EXTENT;
use super::show_shape;
use super::MAX_HBM_ELEMENTS;
use crate::ast::Span;
use penguin::Memory;
use vocab::machine::SBUF_PARTITION_BYTES;
use vocab::machine::{GEMM_MOVING_FMAX, GEMM_STATIONARY_FMAX, PMAX, PSUM_BANK_BYTES, PSUM_FMAX};

/// A tile's shape.
type Shape = [u64; 2];

/// A memory's name as messages write it.
fn mem(m: &Memory) -> String {
    m.name().to_uppercase()
}

#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CheckError {
    /// A binary operator tiles do not have (`//`, `%`, ...).
    #[error("`{op}` is not defined on tiles")]
    NotOnTiles { op: &'static str, at: Span },
    /// A subscript of a call of a method NKI's tiles have (`t.reshape(...)[...]`).
    #[error("`.{method}` is not an operation of nkc's tiles")]
    SlicedNkiMethod { method: String, at: Span },
    /// A subscript of something other than a name.
    #[error("only a tensor name can be sliced")]
    SliceOfNonName { at: Span },
    /// An expression that cannot be a tile.
    #[error("expected a tile")]
    ExpectedTile { at: Span },
    /// A compile-time integer name where a tile is needed.
    #[error("expected a tile, found the integer `{name}`")]
    IntNotTile { name: String, at: Span },
    /// A compile-time scalar name where a tile is needed.
    #[error("expected a tile, found the scalar `{name}`")]
    ScalarNameNotTile { name: String, at: Span },
    /// A scalar where a tile is needed.
    #[error("expected a tile, found a scalar")]
    ScalarNotTile { at: Span },
    /// An HBM tensor read by a compute engine, as an operand of `what`.
    #[error("`{tensor}` is in HBM, which compute operations cannot read")]
    HbmOperand {
        tensor: String,
        what: String,
        at: Span,
    },
    /// An on-chip tile of more than [`PMAX`] partitions: an operation's result (`result`), or a
    /// buffer made by `nl.ndarray`.
    #[error("this {} tile has {} partitions; at most {PMAX} are allowed", mem(.memory), .shape[0])]
    TooManyPartitions {
        memory: Memory,
        shape: Shape,
        result: bool,
        at: Span,
    },
    /// A value assigned into a destination of another shape.
    #[error("the value has shape {} but its destination in `{tensor}` has shape {}", show_shape(*.value), show_shape(*.dest))]
    AssignShape {
        value: Shape,
        tensor: String,
        dest: Shape,
        at: Span,
    },
    /// A compute result written into HBM.
    #[error("`{tensor}` is in HBM; only nl.store writes HBM")]
    HbmWrite { tensor: String, at: Span },
    /// A result written into PSUM by an instruction that cannot write it (a load, an iota, a
    /// statistics op).
    #[error("`{tensor}` is in PSUM, which `{op}` cannot write")]
    PsumWrite {
        tensor: String,
        op: &'static str,
        at: Span,
    },
    /// A Tensor-engine result written into SBUF.
    #[error("{op} results go to PSUM, but `{tensor}` is in SBUF")]
    TensorEngineDst {
        op: &'static str,
        tensor: String,
        at: Span,
    },
    /// Elementwise operands of shapes that do not broadcast.
    #[error("`{op}` of tiles of shapes {} and {}", show_shape(*.a), show_shape(*.b))]
    ElementwiseShape {
        op: &'static str,
        a: Shape,
        b: Shape,
        a_at: Span,
        b_at: Span,
        at: Span,
    },
    /// An elementwise operation of two scalars.
    #[error("`{op}` of two scalars")]
    TwoScalars { op: &'static str, at: Span },
    /// A call of a method NKI's tiles have (`t.reshape(...)`), on `module`.
    #[error("`.{method}` is not an operation of nkc's tiles")]
    NkiMethodCall {
        module: String,
        method: String,
        at: Span,
    },
    /// `nl.foo` / `nisa.foo` that is not an operation; `other` is the module that has it.
    #[error("unknown operation `{module}.{name}`")]
    UnknownOp {
        module: String,
        name: String,
        other: Option<&'static str>,
        at: Span,
    },
    /// A call of something that is not an operation.
    #[error("this is not an operation")]
    NotCallable { at: Span },
    /// A transpose over the Tensor engine's limits.
    #[error("nisa.nc_transpose of a {} tile; both dimensions must be at most {PMAX}", show_shape(*.shape))]
    TransposeLimit { shape: Shape, at: Span },
    /// A reduction along another axis than the free one.
    #[error("reductions are along the free axis (axis=1), not axis={axis}")]
    ReduceAxis { axis: i64, at: Span },
    /// `nl.store(...)` used as a value.
    #[error("nl.store returns nothing")]
    StoreAsValue { at: Span },
    /// A range call used as a value.
    #[error("`{name}` is only the iterator of a `for` loop")]
    RangeAsValue { name: String, at: Span },
    /// `nl.load` of an on-chip tensor.
    #[error("nl.load reads HBM, but `{tensor}` is in {}", mem(.memory))]
    LoadNotHbm {
        tensor: String,
        memory: Memory,
        at: Span,
    },
    /// `transpose_x=` that is not a boolean literal.
    #[error("`transpose_x` must be True or False")]
    TransposeXNotBool { at: Span },
    /// `nl.matmul` without `transpose_x=True` of an `x` too large to transpose on the Tensor
    /// engine.
    #[error(
        "nl.matmul without `transpose_x=True` transposes x, which must then be at most [128, 128]"
    )]
    MatmulNeedsTransposeX { at: Span },
    /// A Tensor-engine operand outside SBUF (`at` is the operand).
    #[error("Tensor-engine operands must be in SBUF, but `{tensor}` is in {}", mem(.memory))]
    TensorEngineOperand {
        tensor: String,
        memory: Memory,
        at: Span,
    },
    /// Matmul operands whose contraction dimensions differ.
    #[error("matmul contraction dimensions differ: x is {} and y is {}", show_shape(*.x), show_shape(*.y))]
    MatmulShape {
        x: Shape,
        y: Shape,
        x_at: Span,
        y_at: Span,
        at: Span,
    },
    /// A matmul over the Tensor engine's limits.
    #[error("matmul of {} and {} is too large: {}", show_shape(*.x), show_shape(*.y), matmul_excess(*.x, *.y).join(", "))]
    MatmulLimit { x: Shape, y: Shape, at: Span },
    /// `nisa.activation(op=...)` that is not an activation function.
    #[error("`op` of nisa.activation must be an activation function")]
    ActivationFunc { at: Span },
    /// A scale or bias tile of `nisa.activation` that is not a `[p, 1]` column.
    #[error("the {what} of nisa.activation must be a [{p}, 1] tile, found {}", show_shape(*.shape))]
    ActivationColumn {
        what: &'static str,
        p: u64,
        shape: Shape,
        at: Span,
    },
    /// A scalar bias of `nisa.activation`.
    #[error("the bias of nisa.activation must be a [{p}, 1] tile")]
    ActivationScalarBias { p: u64, at: Span },
    /// `nl.zeros(...)` (or another buffer maker) not bound to a name.
    #[error("`{name}` makes a buffer; bind it to a name")]
    UnboundBuffer { name: String, at: Span },
    /// A bfloat16 buffer in PSUM.
    #[error("PSUM holds float32 only")]
    Bf16InPsum { at: Span },
    /// A PSUM tile of `bytes` per partition, more than a bank.
    #[error("a PSUM tile of {} needs {bytes} bytes per partition; a PSUM bank holds {PSUM_BANK_BYTES} ({PSUM_FMAX} float32)", show_shape(*.shape))]
    PsumTooLarge { shape: Shape, bytes: u64, at: Span },
    /// `nl.zeros(..., buffer=nl.shared_hbm)`: a buffer maker that writes HBM.
    #[error("{name} cannot make an HBM array")]
    MemsetHbm { name: String, at: Span },
    /// `x.shape` of a tensor of other than two dimensions, given as a tile's shape.
    #[error("a tile has 2 dimensions, but this shape has {}", .shape.len())]
    ShapeDims { shape: Vec<u64>, at: Span },
    /// A shape that is not a tuple.
    #[error("a shape is a pair `(rows, cols)`")]
    ShapeNotTuple { at: Span },
    /// A shape tuple of other than two items.
    #[error("tensors have 2 dimensions, but this shape has {dims}")]
    ShapeArity { dims: usize, at: Span },
    /// A dimension larger than `max`.
    #[error("a dimension must be at most {max}, found {value}")]
    DimTooLarge { value: i64, max: i64, at: Span },
    /// A dimension smaller than 1.
    #[error("a dimension must be at least 1, found {value}")]
    DimNotPositive { value: i64, at: Span },
    /// `x.dtype` of a scalar name.
    #[error("`{name}` is a scalar; it has no dtype")]
    ScalarDtype { name: String, at: Span },
    /// A dtype other than `nl.float32` / `nl.bfloat16`.
    #[error("unsupported dtype")]
    UnsupportedDtype { at: Span },
    /// A `buffer=` that is not a memory.
    #[error("`buffer` must be a memory")]
    BadBuffer { at: Span },
    /// `nl.store` into an on-chip tensor.
    #[error("nl.store writes HBM, but `{tensor}` is in {}", mem(.memory))]
    StoreNotHbm {
        tensor: String,
        memory: Memory,
        at: Span,
    },
    /// `nl.store` into a kernel parameter that the kernel also reads (`out_params`).
    #[error("the parameter `{tensor}` is both read and stored into")]
    StoreIntoParam { tensor: String, at: Span },
    /// `nl.store` of a value that is not in SBUF.
    #[error("nl.store writes an SBUF tile, but `{tensor}` is in {}", mem(.memory))]
    StoreValueNotSbuf {
        tensor: String,
        memory: Memory,
        at: Span,
    },
    /// `nl.store` of a value whose shape differs from the destination slice's.
    #[error("nl.store of a {} tile into a {} slice", show_shape(*.value), show_shape(*.dest))]
    StoreShape {
        value: Shape,
        dest: Shape,
        value_at: Span,
        dest_at: Span,
        at: Span,
    },
    /// An `op=` of `nisa.tensor_scalar` / `nisa.tensor_tensor` that is not an ALU operation.
    #[error("expected an arithmetic operation")]
    ExpectedAluOp { at: Span },
    /// An `op=` of `nisa.tensor_reduce` that is not a reduction.
    #[error("expected a reduction")]
    ExpectedReduceOp { at: Span },
    /// `op1` without `operand1`, or the other way round (`at` is the one given).
    #[error("`op1` and `operand1` go together")]
    Op1WithoutOperand1 { at: Span },
    /// A name bound twice as a parameter of one kernel.
    #[error("parameter `{name}` is declared twice")]
    DuplicateParam { name: String, first: Span, at: Span },
    /// A `return` that is not the kernel's last statement.
    #[error("`return` must be the last statement of the kernel")]
    ReturnNotLast { at: Span },
    /// A kernel without `return`.
    #[error("kernel `{kernel}` has no `return`")]
    NoReturn { kernel: String, at: Span },
    /// A parameter's default that is not a compile-time scalar.
    #[error("the default of `{param}` is not a compile-time scalar")]
    DefaultNotConst { param: String, at: Span },
    /// An untyped parameter with no shape from the run.
    #[error("parameter `{name}` has no type, and no shape was given for it")]
    UnspecialisedParam { name: String, at: Span },
    /// An untyped parameter given a shape nkc's HBM tensors cannot have.
    #[error("`{name}` is given the shape [{}]; nkc's HBM tensors have dimensions from 1 to {MAX_EXTENT}, whose leading ones multiply to at most {MAX_EXTENT}", .shape.iter().map(u64::to_string).collect::<Vec<_>>().join(", "))]
    BadSpecShape {
        name: String,
        shape: Vec<u64>,
        at: Span,
    },
    /// A parameter annotation other than `nl.hbm[DTYPE, ROWS, COLS]`.
    #[error("a parameter's type is `nl.hbm[DTYPE, ROWS, COLS]`")]
    BadParamType { param: String, at: Span },
    /// `return` of nothing.
    #[error("`return` names no output")]
    EmptyReturn { at: Span },
    /// `return` of something that is not a name.
    #[error("`return` takes names of output arrays")]
    ReturnNotName { at: Span },
    /// `return` of a name that is not an output array (`what` says what it is).
    #[error("`{name}` is {what}, not an output array")]
    ReturnNotOutput {
        name: String,
        what: String,
        at: Span,
    },
    /// One array returned twice.
    #[error("`{name}` is returned twice")]
    DuplicateReturn { name: String, first: Span, at: Span },
    /// A call statement whose result is dropped.
    #[error("the result of this call is not used")]
    UnusedResult { at: Span },
    /// An expression statement that does nothing.
    #[error("this expression does nothing")]
    NoEffect { at: Span },
    /// `return` in a loop body.
    #[error("`return` inside a loop")]
    ReturnInLoop { at: Span },
    /// A `return` at the end of an `nl.affine_range` body whose value depends on the loop index.
    #[error("the value returned inside this loop differs from one iteration to the next")]
    ReturnVaries { at: Span },
    /// An assignment to a kernel parameter (`prev` is the parameter).
    #[error("cannot assign to the parameter `{name}`")]
    AssignToParam { name: String, prev: Span, at: Span },
    /// An assignment to a loop variable.
    #[error("cannot assign to the loop variable `{name}`")]
    AssignToLoopVar { name: String, prev: Span, at: Span },
    /// A compile-time integer name rebound to a tile.
    #[error("`{name}` is a compile-time integer; it cannot be rebound to a tile")]
    IntRebound { name: String, prev: Span, at: Span },
    /// A tile name rebound to an integer.
    #[error("`{name}` is a tile; it cannot be rebound to an integer")]
    TileRebound { name: String, prev: Span, at: Span },
    /// A name bound outside a loop, rebound in its body.
    #[error("`{name}` is bound outside this loop and cannot be rebound inside it")]
    RebindInLoop { name: String, prev: Span, at: Span },
    /// A binding of something that is neither an integer nor a tile.
    #[error("a name binds a compile-time integer or a tile")]
    NotIntOrTile { at: Span },
    /// Tuple unpacking of a value of another length.
    #[error("{names} names to unpack, but the value has {values}")]
    UnpackCount {
        names: usize,
        values: usize,
        at: Span,
    },
    /// Unpacking of something other than a tuple or `x.shape`.
    #[error("only a tuple or `x.shape` can be unpacked")]
    UnpackNotTuple { at: Span },
    /// An `assert` whose condition is false (`says` is its message).
    #[error("assertion failed")]
    AssertFailed {
        assert_at: Span,
        says: Option<String>,
        /// A dtype the condition names that nkc does not have (`nl.float8_e4m3`): the likely
        /// reason the assertion fails.
        missing_dtype: Option<String>,
        at: Span,
    },
    /// `.shape` of something other than a name.
    #[error("`.shape` is only available on a tensor name")]
    ShapeOfNonName { at: Span },
    /// `.shape` of a name that is not a tensor (`what` says what it is).
    #[error("`{name}` is {what}; it has no shape")]
    ShapeOfScalar {
        name: String,
        what: &'static str,
        at: Span,
    },
    /// A subscript of a scalar name.
    #[error("`{name}` is a scalar and cannot be subscripted")]
    SubscriptOfScalar { name: String, at: Span },
    /// `x += ...` of a compile-time scalar.
    #[error("`{name}` is a compile-time scalar; it cannot be updated in place")]
    UpdateScalar { name: String, at: Span },
    /// `a, b += ...`.
    #[error("`{op}=` cannot update a tuple")]
    UpdateTuple { op: &'static str, at: Span },
    /// An in-place update of an HBM array.
    #[error("`{tensor}` is in HBM; only nl.store writes HBM")]
    UpdateHbm { tensor: String, at: Span },
    /// An in-place update with an operator tiles do not have.
    #[error("`{op}=` is not defined on tiles")]
    UpdateNotOnTiles { op: &'static str, at: Span },
    /// A form of an NKI operation that nkc does not model (`what` names it, `help` says what to
    /// write instead).
    #[error("{what}")]
    OpFormUnsupported {
        what: String,
        help: String,
        at: Span,
    },
    /// A loop variable that reuses a bound name.
    #[error("the loop variable `{name}` reuses a name already bound")]
    LoopVarShadows { name: String, prev: Span, at: Span },
    /// A `for` over something other than a range call.
    #[error("a loop iterates over a range call")]
    BadLoopIter { at: Span },
    /// A loop bound beyond ±[`MAX_EXTENT`]; `bad` is the bound.
    #[error("a loop bound must lie between -{MAX_EXTENT} and {MAX_EXTENT}, but this range {} at {bad}", if .bad == .lb { "starts" } else { "stops" })]
    LoopBound {
        lb: i64,
        ub: i64,
        bad: i64,
        at: Span,
    },
    /// A loop of fewer than one or more than [`MAX_EXTENT`] iterations.
    #[error("{}", trip_count_message(*.lb, *.ub))]
    TripCount { lb: i64, ub: i64, at: Span },
    /// A binding of a reserved name.
    #[error("`{name}` is a reserved name and cannot be bound")]
    ReservedName { name: String, at: Span },
    /// An expression of loop variables (shown as `shown`) where a compile-time integer is needed.
    #[error("expected a compile-time integer, found an expression of loop variables")]
    LoopDependent { shown: String, at: Span },
    /// A tile name where an integer is needed.
    #[error("expected an integer, found the tile `{name}`")]
    TileNotInt { name: String, at: Span },
    /// A scalar name where an integer is needed.
    #[error("expected an integer, found the scalar `{name}`")]
    ScalarNotInt { name: String, at: Span },
    /// `nl.tile_size.NAME` for a name nkc does not know.
    #[error("`nl.tile_size.{name}` is not a tile size nkc knows")]
    UnknownTileSize { name: String, at: Span },
    /// A float literal where an integer is needed.
    #[error("expected an integer, found a float")]
    FloatLiteralNotInt { at: Span },
    /// A float value where an integer is needed.
    #[error("expected an integer, found a float")]
    FloatNotInt { at: Span },
    /// Something other than an integer expression.
    #[error("expected an integer")]
    NotInt { at: Span },
    /// A subscript of a tensor where an integer is needed.
    #[error("expected an integer")]
    SubscriptNotInt { at: Span },
    /// An attribute other than `.shape` where an integer is needed.
    #[error("expected an integer, found `.{attr}`")]
    AttrNotInt { attr: String, at: Span },
    /// Overflow in compile-time integer arithmetic.
    #[error("integer overflow in a compile-time expression")]
    ConstOverflow { at: Span },
    /// A product of two loop-dependent expressions (`shown` names them).
    #[error("a product of loop variables is not an affine index")]
    ProductOfIvs { shown: String, at: Span },
    /// `/` between integers.
    #[error("`/` is float division; integers need `//`")]
    IntTrueDivision { at: Span },
    /// `&` of a loop-dependent expression.
    #[error("`&` of a loop variable is not an affine index")]
    AndOfIv { at: Span },
    /// `//` or `%` of a loop-dependent expression.
    #[error("`{op}` of a loop variable is not an affine index")]
    DivOfIv { op: &'static str, at: Span },
    /// An integer division or modulo by zero.
    #[error("division by zero")]
    IntDivisionByZero { at: Span },
    /// `x.shape[...]` with other than one index.
    #[error("`.shape` takes one index, 0 or 1")]
    ShapeIndexCount { at: Span },
    /// `x.shape[k]` past the tensor's `rank` dimensions.
    #[error("{}", if *.rank == 2 { format!("tensors have 2 dimensions; `.shape[{}]` does not exist", .index) } else { format!("this tensor has {} dimensions; `.shape[{}]` does not exist", .rank, .index) })]
    ShapeIndexRange { index: i64, rank: i64, at: Span },
    /// `nl.arange` with a step or other arguments.
    #[error("`nl.arange` takes `(stop)` or `(start, stop)`")]
    ArangeArgs { at: Span },
    /// `nl.arange(start, stop)` that is empty or longer than any tensor.
    #[error("`nl.arange` from {start} to {stop} {}", if .stop <= .start { "is empty" } else { "is longer than any tensor" })]
    ArangeRange { start: i64, stop: i64, at: Span },
    /// A subscript of an index vector other than `[:, None]` / `[None, :]`.
    #[error(
        "an index vector is placed with `[:, None]` (partitions) or `[None, :]` (the free axis)"
    )]
    VectorPlacement { at: Span },
    /// An index vector placed twice.
    #[error("this index vector is already 2-D")]
    VectorPlacedTwice { at: Span },
    /// Something that is not an index vector where one is needed.
    #[error("expected an index vector")]
    NotAVector { at: Span },
    /// `nl.mgrid[...]` with an item that is not `start:stop`.
    #[error("`nl.mgrid` takes ranges `start:stop`")]
    MgridItem { at: Span },
    /// `nl.mgrid[...]` that is empty, too long or not 2-D.
    #[error("`nl.mgrid` takes non-empty ranges no longer than a tensor's extent")]
    MgridShape { at: Span },
    /// `nl.ds` with other arguments than `(start, size)`.
    #[error("`nl.ds` takes `(start, size)`")]
    DsArgs { at: Span },
    /// `nl.ds` of a size below 1.
    #[error("this slice is empty (size {size})")]
    DsEmpty { size: i64, at: Span },
    /// An index vector of one axis used to index dimension `dim` of the other.
    #[error("an index vector of the {} axis indexes the {} dimension", if *.dim == 0 { "free" } else { "partition" }, if *.dim == 0 { "partition" } else { "free" })]
    VectorAxis { axis: usize, dim: usize, at: Span },
    /// Overflow in an index.
    #[error("integer overflow in this index")]
    IndexOverflow { at: Span },
    /// An index vector expression that is not a contiguous range (`why` says why).
    #[error("this index vector expression is not a contiguous range")]
    UnsupportedVector { why: String, at: Span },
    /// An index or `.ap` that would be an access pattern nkc does not take (`why` says why,
    /// `help` what to write).
    #[error("this access pattern is not one nkc lowers")]
    AccessPattern {
        why: String,
        help: &'static str,
        at: Span,
    },
    /// A mask that drops elements in a form nkc does not lower (`why` says which).
    #[error("this mask cannot be lowered: {why}")]
    MaskUnsupported { why: String, at: Span },
    /// A mask that is not a comparison.
    #[error("a mask is a comparison of index expressions")]
    MaskNotComparison { at: Span },
    /// More positional arguments than `op` takes (`params` are its parameters).
    #[error("`{op}` takes {} positional argument{} but {given} were given", .params.len(), if .params.len() == 1 { "" } else { "s" })]
    TooManyArguments {
        op: String,
        params: Vec<&'static str>,
        given: usize,
        at: Span,
    },
    /// A keyword argument given twice.
    #[error("keyword argument `{name}` is given twice")]
    DuplicateKeyword { name: String, first: Span, at: Span },
    /// A loop keyword on a call that is not a range call.
    #[error("`{name}` is a loop keyword; `{op}` does not take it")]
    LoopKeywordMisplaced { name: String, op: String, at: Span },
    /// An argument given by position and by keyword.
    #[error("argument `{name}` is given twice")]
    DuplicateArgument { name: String, first: Span, at: Span },
    /// A keyword the operation does not take (`params` are its parameters).
    #[error("`{op}` has no argument `{name}`")]
    UnknownKeyword {
        op: String,
        name: String,
        params: Vec<&'static str>,
        at: Span,
    },
    /// A required argument not given.
    #[error("`{op}` is missing its argument `{param}`")]
    MissingArgument {
        op: String,
        param: &'static str,
        at: Span,
    },
    /// `stage_id` / `execution_order` on a nested call.
    #[error("`{name}` on a nested call")]
    StmtKeywordNested { name: String, at: Span },
    /// `stage_id` / `execution_order` outside a loop body.
    #[error("`{name}` on a statement that is not in a loop body")]
    StmtKeywordNotInLoop { name: String, at: Span },
    /// `num_stages="..."` other than `"auto"`.
    #[error("`num_stages` must be an integer from 1 to {} or \"auto\"", u32::MAX)]
    NumStagesString { text: String, at: Span },
    /// An integer annotation out of `min..=u32::MAX` (`label` says what it is).
    #[error("`{name}` must be an integer from {min} to {}", u32::MAX)]
    AnnotationInt {
        name: String,
        min: i64,
        label: String,
        at: Span,
    },
    /// A boolean annotation that is not a boolean.
    #[error("`{name}` must be True or False")]
    AnnotationBool { name: String, at: Span },
    /// `is` where neither side is None.
    #[error("`is` compares with None here")]
    IsNotNone { at: Span },
    /// `&` of a float.
    #[error("`&` of a float")]
    AndOfFloat { at: Span },
    /// Something that is not a compile-time value where one is needed.
    #[error("expected a compile-time value")]
    NotConst { at: Span },
    /// Something other than a shape or a tuple compared with a shape.
    #[error("expected a tuple of integers")]
    NotATuple { at: Span },
    /// `None` as an operand.
    #[error("`None` is not a number")]
    NoneOperand { at: Span },
    /// A float division by zero.
    #[error("division by zero")]
    FloatDivisionByZero { at: Span },
    /// A builtin (`min`, `math.ceil`, ...) called with keywords.
    #[error("`{name}` takes no keyword arguments")]
    BuiltinKeyword { name: String, at: Span },
    /// A builtin called with the wrong number of arguments.
    #[error("`{name}` takes {}, but {given} were given", if *.variadic { "one or more arguments" } else { "one argument" })]
    BuiltinArity {
        name: String,
        variadic: bool,
        given: usize,
        at: Span,
    },
    /// A builtin whose result is not a 64-bit integer.
    #[error("`{name}` of {value} is not a 64-bit integer")]
    BuiltinOverflow { name: String, value: f64, at: Span },
    /// `math.sqrt` / `math.log` outside their domain.
    #[error("`{name}` of {value} is not a real number")]
    MathDomain { name: String, value: f64, at: Span },
    /// A tile as the condition of `if` / `assert` (`what` names it).
    #[error("the condition of `{what}` is a tile, not a compile-time value")]
    TileCondition { what: String, at: Span },
    /// `nl.broadcast_to` of a scalar.
    #[error("nl.broadcast_to of a scalar")]
    BroadcastScalar { at: Span },
    /// `nl.broadcast_to` of an HBM tensor.
    #[error("nl.broadcast_to of an HBM tensor")]
    BroadcastHbm { at: Span },
    /// A broadcast that is not of an axis of size 1, or past the limits.
    #[error("cannot broadcast a {} tile to {}", show_shape(*.from), show_shape(*.to))]
    BadBroadcast { from: Shape, to: Shape, at: Span },
    /// `nisa.dma_copy` without `src=`.
    #[error("`nisa.dma_copy` needs `src=`")]
    DmaCopyNoSrc { at: Span },
    /// `nisa.dma_copy` with a positional argument after `dst` and `src`.
    #[error("`nisa.dma_copy` takes `dst` and `src` positionally, its other parameters by keyword")]
    DmaCopyPositional { at: Span },
    /// Two kernels of one name.
    #[error("kernel `{name}` is defined twice")]
    DuplicateKernel { name: String, first: Span, at: Span },
    /// `--kernel NAME` for a name no kernel has; `kernels` are those of the file.
    #[error("no kernel named `{name}` in this file")]
    UnknownKernel {
        name: String,
        kernels: Vec<String>,
        at: Span,
    },
    /// A `raise` run at compile time (`classes`): the exception's type and message.
    #[error("the kernel raised `{exc}`{}", if .message.is_empty() { String::new() } else { format!(": {}", .message) })]
    Raised {
        exc: String,
        message: String,
        at: Span,
    },
    /// A file with no kernel.
    #[error("this file defines no kernel")]
    NoKernel { at: Span },
    /// A file of several kernels, none chosen (`at` is the second).
    #[error("this file defines {} kernels; choose one with --kernel", .kernels.len())]
    SeveralKernels { kernels: Vec<String>, at: Span },
    /// A module-level statement that is not a scalar binding.
    #[error("only compile-time scalar bindings may appear outside a kernel")]
    BadModuleItem { at: Span },
    /// A module or builtin name used as a value.
    #[error("`{name}` is not a value")]
    NotAValue { name: String, at: Span },
    /// A name bound in a loop body (at `def`), used after it; `why` it is not bound there.
    #[error("`{name}` is bound only inside a loop body")]
    OutOfScope {
        name: String,
        def: Span,
        why: super::loop_scope::LoopExit,
        at: Span,
    },
    /// A name bound nowhere.
    #[error("cannot find `{name}` in this kernel")]
    UndefinedName { name: String, at: Span },
    /// HBM arrays of more than [`MAX_HBM_ELEMENTS`] elements in all, crossed at `tensor`.
    #[error("the HBM arrays of this kernel hold {total} elements in all, more than the {MAX_HBM_ELEMENTS} (2^27) nkc can run")]
    HbmTooLarge {
        total: u64,
        tensor: String,
        shape: Shape,
        elems: u64,
        at: Span,
    },
    /// An SBUF tile larger than a partition of SBUF.
    #[error("an SBUF tile of {} needs {bytes} bytes per partition; a partition of SBUF holds {SBUF_PARTITION_BYTES}", show_shape(*.shape))]
    SbufTileTooLarge {
        tensor: String,
        shape: Shape,
        bytes: u64,
        at: Span,
    },
    /// More indices than the array `name` of logical shape `dims` has dimensions.
    #[error("`{name}` has {} dimensions but the subscript has {indices} indices", .dims.len())]
    NdIndexCount {
        name: String,
        dims: Vec<u64>,
        indices: usize,
        at: Span,
    },
    /// Overflow in the bounds of a slice.
    #[error("integer overflow in the bounds of this slice")]
    SliceOverflow { at: Span },
    /// An HBM array shape nkc does not hold.
    #[error("an HBM array of shape {dims:?} is not supported")]
    BadHbmShape { dims: Vec<u64>, at: Span },
    /// A subscript of a 2-D tensor with other than two indices.
    #[error("`{name}` has 2 dimensions but the subscript has {indices} {}", if *.indices == 1 { "index" } else { "indices" })]
    WrongIndexCount {
        name: String,
        indices: usize,
        at: Span,
    },
    /// A slice whose size (`shown`) depends on a loop variable.
    #[error("the size of a slice must be a compile-time constant")]
    SliceSizeNotConst { shown: String, at: Span },
    /// A slice of size zero or less.
    #[error("this slice is empty (size {size})")]
    EmptySlice { size: i64, at: Span },
    /// A loop variable multiplied by more than [`MAX_EXTENT`] in an index starting at `start`.
    #[error("the loop variable `{iv}` is multiplied by {coeff} in this index; a coefficient must lie between -{MAX_EXTENT} and {MAX_EXTENT}")]
    IndexCoeffRange {
        iv: String,
        coeff: i64,
        start: String,
        at: Span,
    },
    /// A slice of dimension `dim` of `tensor` that leaves it (`start..end` of `extent`) in the
    /// iteration `when` (`i = 3`, ...); the slice starts at `shown` and has `size` elements.
    #[error("{} slice {start}..{end} is out of bounds for `{tensor}` ({extent} {}){}", if *.dim == 0 { "row" } else { "column" }, if *.dim == 0 { "rows" } else { "columns" }, if .when.is_empty() { String::new() } else { format!(" when {}", .when.join(", ")) })]
    SliceOutOfBounds {
        dim: usize,
        start: i128,
        end: i128,
        tensor: String,
        extent: u64,
        when: Vec<String>,
        shown: String,
        size: u64,
        at: Span,
    },
}

/// The dimensions of `x.T @ y` over the Tensor engine's limits, as `K = 256 > 128`.
pub(super) fn matmul_excess(x: Shape, y: Shape) -> Vec<String> {
    let ([k, m], n) = (x, y[1]);
    let mut bad = Vec::new();
    if k > PMAX {
        bad.push(format!("K = {k} > {PMAX}"));
    }
    if m > GEMM_STATIONARY_FMAX {
        bad.push(format!("M = {m} > {GEMM_STATIONARY_FMAX}"));
    }
    if n > GEMM_MOVING_FMAX {
        bad.push(format!("N = {n} > {GEMM_MOVING_FMAX}"));
    }
    bad
}

/// Why a loop of `lb..ub` has a bad trip count.
fn trip_count_message(lb: i64, ub: i64) -> String {
    match ub.checked_sub(lb) {
        Some(t) if t < 1 => format!(
            "this loop runs {} times; a loop needs at least one iteration",
            t.max(0)
        ),
        _ => format!("this loop runs more than {MAX_EXTENT} times, the most supported"),
    }
}
