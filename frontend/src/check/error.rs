//! [`CheckError`]: the problems the semantic checks find in the operations of a kernel (the tile
//! expressions of `ops.rs` and the `nisa` forms of `nisa.rs`).
//!
//! Each variant carries the data of one problem (names, shapes, memories, spans); its message
//! comes from `thiserror`, and `impl From<CheckError> for Diagnostic` is the one place where a
//! variant gets its code (see `codes`), labels, notes and help. The checker records diagnostics
//! (`Checker::error` takes anything that converts), so the other check files, which still build
//! their diagnostics directly, and these variants report side by side, in source order.
//!
//! Invariants: every span is a byte range into the source; shapes are `[partitions, free]`.

use super::ops::not_in_nkc;
use super::show_shape;
use crate::ast::Span;
use crate::codes;
use penguin::{ActFunc, Memory};
use vocab::machine::{GEMM_MOVING_FMAX, GEMM_STATIONARY_FMAX, PMAX, PSUM_BANK_BYTES, PSUM_FMAX};
use vocab::Diagnostic;

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
    /// A result of another engine than the Tensor engine written into PSUM.
    #[error("`{tensor}` is in PSUM, which only the Tensor engine writes")]
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
    /// `nl.matmul` without `transpose_x=True`.
    #[error("nl.matmul needs `transpose_x=True`")]
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
    /// `nl.store` into a kernel parameter.
    #[error("cannot store into the parameter `{tensor}`; parameters are read-only")]
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

impl CheckError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        use CheckError::*;
        match self {
            NotOnTiles { .. } | UnboundBuffer { .. } => codes::UNSUPPORTED,
            SlicedNkiMethod { .. } | SliceOfNonName { .. } => codes::NOT_SUBSCRIPTABLE,
            ExpectedTile { .. }
            | IntNotTile { .. }
            | ScalarNameNotTile { .. }
            | TransposeXNotBool { .. }
            | ExpectedAluOp { .. }
            | ExpectedReduceOp { .. } => codes::WRONG_ARGUMENT_KIND,
            ScalarNotTile { .. } | TwoScalars { .. } => codes::SCALAR_OPERAND,
            HbmOperand { .. } => codes::HBM_OPERAND,
            TooManyPartitions { .. } => codes::TOO_MANY_PARTITIONS,
            AssignShape { .. } => codes::ASSIGN_SHAPE,
            HbmWrite { .. } | MemsetHbm { .. } => codes::HBM_WRITE,
            PsumWrite { .. } => codes::PSUM_WRITE,
            TensorEngineDst { .. } => codes::TENSOR_ENGINE_DST,
            ElementwiseShape { .. } => codes::ELEMENTWISE_SHAPE,
            NkiMethodCall { .. } | NotCallable { .. } => codes::NOT_CALLABLE,
            UnknownOp { .. } => codes::UNKNOWN_OP,
            TransposeLimit { .. } => codes::TRANSPOSE_LIMIT,
            ReduceAxis { .. } => codes::REDUCE_AXIS,
            StoreAsValue { .. } => codes::UNUSED_OR_VOID,
            RangeAsValue { .. } => codes::BAD_LOOP_ITER,
            LoadNotHbm { .. } => codes::LOAD_NOT_HBM,
            MatmulNeedsTransposeX { .. } => codes::MATMUL_NEEDS_TRANSPOSE_X,
            TensorEngineOperand { memory, .. } => {
                if *memory == Memory::Hbm {
                    codes::HBM_OPERAND
                } else {
                    codes::TENSOR_ENGINE_OPERAND
                }
            }
            MatmulShape { .. } => codes::MATMUL_SHAPE,
            MatmulLimit { .. } => codes::MATMUL_LIMIT,
            ActivationFunc { .. } => codes::ACTIVATION_FUNC,
            ActivationColumn { .. } | ActivationScalarBias { .. } => codes::ACTIVATION_OPERAND,
            Bf16InPsum { .. } => codes::BF16_IN_PSUM,
            PsumTooLarge { .. } => codes::PSUM_TOO_LARGE,
            ShapeDims { .. }
            | ShapeNotTuple { .. }
            | ShapeArity { .. }
            | DimTooLarge { .. }
            | DimNotPositive { .. } => codes::BAD_SHAPE,
            ScalarDtype { .. } | UnsupportedDtype { .. } => codes::UNSUPPORTED_DTYPE,
            BadBuffer { .. } => codes::BAD_BUFFER,
            StoreNotHbm { .. } | StoreIntoParam { .. } => codes::STORE_DST,
            StoreValueNotSbuf { .. } => codes::STORE_VALUE_NOT_SBUF,
            StoreShape { .. } => codes::STORE_SHAPE,
            Op1WithoutOperand1 { .. } => codes::MISSING_ARGUMENT,
        }
    }

    /// The offending text.
    pub fn span(&self) -> &Span {
        use CheckError::*;
        match self {
            NotOnTiles { at, .. }
            | SlicedNkiMethod { at, .. }
            | SliceOfNonName { at }
            | ExpectedTile { at }
            | IntNotTile { at, .. }
            | ScalarNameNotTile { at, .. }
            | ScalarNotTile { at }
            | HbmOperand { at, .. }
            | TooManyPartitions { at, .. }
            | AssignShape { at, .. }
            | HbmWrite { at, .. }
            | PsumWrite { at, .. }
            | TensorEngineDst { at, .. }
            | ElementwiseShape { at, .. }
            | TwoScalars { at, .. }
            | NkiMethodCall { at, .. }
            | UnknownOp { at, .. }
            | NotCallable { at }
            | TransposeLimit { at, .. }
            | ReduceAxis { at, .. }
            | StoreAsValue { at }
            | RangeAsValue { at, .. }
            | LoadNotHbm { at, .. }
            | TransposeXNotBool { at }
            | MatmulNeedsTransposeX { at }
            | TensorEngineOperand { at, .. }
            | MatmulShape { at, .. }
            | MatmulLimit { at, .. }
            | ActivationFunc { at }
            | ActivationColumn { at, .. }
            | ActivationScalarBias { at, .. }
            | UnboundBuffer { at, .. }
            | Bf16InPsum { at }
            | PsumTooLarge { at, .. }
            | MemsetHbm { at, .. }
            | ShapeDims { at, .. }
            | ShapeNotTuple { at }
            | ShapeArity { at, .. }
            | DimTooLarge { at, .. }
            | DimNotPositive { at, .. }
            | ScalarDtype { at, .. }
            | UnsupportedDtype { at }
            | BadBuffer { at }
            | StoreNotHbm { at, .. }
            | StoreIntoParam { at, .. }
            | StoreValueNotSbuf { at, .. }
            | StoreShape { at, .. }
            | ExpectedAluOp { at }
            | ExpectedReduceOp { at }
            | Op1WithoutOperand1 { at } => at,
        }
    }
}

impl From<CheckError> for Diagnostic {
    /// The one place where a check error gets its code, labels, notes and help.
    fn from(e: CheckError) -> Diagnostic {
        use CheckError::*;
        let d = Diagnostic::new(e.code(), e.to_string(), e.span().clone());
        match e {
            NotOnTiles { .. } => d.with_label("tiles support `+ - * /`"),
            SlicedNkiMethod { method, .. } => {
                let (note, help) = not_in_nkc(&method).unwrap_or_default();
                d.with_label("NKI's, not nkc's")
                    .with_note(note)
                    .with_help(help)
            }
            SliceOfNonName { .. } => d
                .with_label("not a tensor name")
                .with_help("bind the value to a name first"),
            ExpectedTile { .. } => d.with_label("not a tile expression"),
            IntNotTile { .. } => d.with_label("an integer, not a tile"),
            ScalarNameNotTile { .. } => d.with_label("a compile-time scalar, not a tile"),
            ScalarNotTile { .. } => d.with_label("a scalar"),
            HbmOperand { what, .. } => d
                .with_label(format!("an HBM operand of {what}"))
                .with_help("load it into SBUF first, with nl.load"),
            TooManyPartitions {
                shape, result: true, ..
            } => d
                .with_label(format!("a tile of shape {}", show_shape(shape)))
                .with_help(format!(
                    "split the rows into tiles of at most {PMAX} (a loop over row blocks)"
                )),
            TooManyPartitions { shape, .. } => d.with_label(format!("shape {}", show_shape(shape))),
            AssignShape { value, .. } => d.with_label(format!("shape {}", show_shape(value))),
            HbmWrite { .. } => d
                .with_label("this writes HBM")
                .with_help("compute into an SBUF tile, then nl.store it"),
            PsumWrite { op, .. } => d
                .with_label(format!("written by `{op}`, not by the Tensor engine"))
                .with_note("PSUM holds results of nl.matmul, nisa.nc_matmul and nisa.nc_transpose, and nl.zeros(..., buffer=nl.psum)")
                .with_help("write the result into an SBUF tile instead"),
            TensorEngineDst { .. } => d
                .with_label("a Tensor-engine result")
                .with_help("bind the result to a new name (it goes to PSUM), then nl.copy it into SBUF"),
            ElementwiseShape {
                a, b, a_at, b_at, ..
            } => d
                .with_label("incompatible shapes")
                .with_secondary(a_at, format!("shape {}", show_shape(a)))
                .with_secondary(b_at, format!("shape {}", show_shape(b)))
                .with_note("elementwise operands have equal shapes, or one is [P, 1] and broadcasts along the free axis"),
            TwoScalars { .. } => d.with_label("at least one operand must be a tile"),
            NkiMethodCall { module, method, .. } => {
                let (note, help) = not_in_nkc(&method).unwrap_or_default();
                d.with_label(format!("`{module}.{method}` is NKI's, not nkc's"))
                    .with_note(note)
                    .with_help(help)
            }
            UnknownOp {
                module,
                name,
                other,
                ..
            } => {
                let d = d.with_label(format!("`{module}` has no operation `{name}`"));
                match (other, not_in_nkc(&name)) {
                    (Some(o), _) => d.with_help(format!("did you mean `{o}.{name}`?")),
                    (None, Some((note, help))) => d
                        .with_label(format!("`{module}.{name}` is NKI's, not nkc's"))
                        .with_note(note)
                        .with_help(help),
                    (None, None) => d,
                }
            }
            NotCallable { .. } => d
                .with_label("not callable")
                .with_note("calls are `nl.*` and `nisa.*` operations"),
            TransposeLimit { .. } => d.with_label("too large to transpose"),
            ReduceAxis { .. } => d
                .with_label("only axis=1 is supported")
                .with_help("transpose the tile with nisa.nc_transpose to reduce across partitions"),
            StoreAsValue { .. } => d
                .with_label("used as a value")
                .with_help("write `nl.store(dst, value=t)` as a statement of its own"),
            RangeAsValue { .. } => d.with_label("used as a value"),
            LoadNotHbm { .. } => d
                .with_label("not in HBM")
                .with_help("use the tile directly, or nl.copy it"),
            TransposeXNotBool { .. } => d.with_label("not a boolean"),
            MatmulNeedsTransposeX { .. } => d
                .with_label("x @ y with x as [M, K] is not supported")
                .with_note("the Tensor engine computes x.T @ y with x given as [K, M]")
                .with_help("pass x transposed ([K, M]) with transpose_x=True, or transpose it first with nisa.nc_transpose"),
            TensorEngineOperand { memory, .. } => d.with_label("not in SBUF").with_help(
                if memory == Memory::Hbm {
                    "load it into SBUF first, with nl.load"
                } else {
                    "copy it into SBUF first, with nl.copy"
                },
            ),
            MatmulShape {
                x, y, x_at, y_at, ..
            } => d
                .with_label("x[K, M] and y[K, N] need the same K")
                .with_secondary(x_at, format!("K = {}", x[0]))
                .with_secondary(y_at, format!("K = {}", y[0])),
            MatmulLimit { .. } => d
                .with_label("over the Tensor engine's limits")
                .with_note(format!(
                    "K and M are at most {PMAX} and N at most {GEMM_MOVING_FMAX}"
                ))
                .with_help("tile the matmul with loops, accumulating over K with `acc += ...`"),
            ActivationFunc { .. } => {
                let names: Vec<String> = ActFunc::ALL
                    .iter()
                    .map(|f| format!("nl.{}", f.name()))
                    .collect();
                d.with_label("not an activation function")
                    .with_note(format!("the functions are {}", names.join(", ")))
            }
            ActivationColumn { shape, .. } => d
                .with_label(format!("shape {}", show_shape(shape)))
                .with_note("one value per partition, broadcast along the free axis"),
            ActivationScalarBias { .. } => d
                .with_label("a scalar")
                .with_help("add a scalar with nl.add after the activation, or make a [P, 1] tile"),
            UnboundBuffer { name, .. } => d
                .with_label("not bound to a name")
                .with_help(format!("write `buf = {name}(...)` as a statement of its own")),
            Bf16InPsum { .. } => d
                .with_label("bfloat16 in PSUM")
                .with_note(
                    "bfloat16 is a storage type for HBM and SBUF; PSUM accumulates in float32",
                )
                .with_help("use dtype=nl.float32"),
            PsumTooLarge { .. } => d.with_label("larger than one PSUM bank"),
            MemsetHbm { .. } => d
                .with_label("only nl.store writes HBM")
                .with_help("use nl.ndarray(..., buffer=nl.shared_hbm) and store zeros into it"),
            ShapeDims { shape, .. } => d
                .with_label(format!("the shape {shape:?}"))
                .with_help("write the tile's shape `(rows, cols)`"),
            ShapeNotTuple { .. } => d.with_label("not a tuple"),
            ShapeArity { dims, .. } => {
                let d = d.with_label("expected `(rows, cols)`");
                if dims > 2 {
                    d.with_note("nkc's tiles are `[partitions, free]`: one partition dimension and one free dimension")
                        .with_help("flatten the free dimensions into one, `(P, A * B)`, and address a part of it with a slice such as `t[:, a * B:(a + 1) * B]`")
                } else {
                    d
                }
            }
            DimTooLarge { .. } => d.with_label("too large"),
            DimNotPositive { .. } => d.with_label("not a positive size"),
            ScalarDtype { .. } => d.with_label("not a tensor"),
            UnsupportedDtype { .. } => d
                .with_label("not nl.float32 or nl.bfloat16")
                .with_help("use nl.float32 (or nl.bfloat16 for HBM and SBUF storage)"),
            BadBuffer { .. } => d
                .with_label("not a memory")
                .with_note("the memories are nl.sbuf, nl.psum and nl.shared_hbm"),
            StoreNotHbm { .. } => d
                .with_label("not in HBM")
                .with_help("to write part of an on-chip tile, use slice assignment: `t[r0:r1, c0:c1] = value`"),
            StoreIntoParam { .. } => d
                .with_label("a kernel input")
                .with_help("make an output with nl.ndarray(..., buffer=nl.shared_hbm) and return it"),
            StoreValueNotSbuf { memory, .. } => d.with_label("not in SBUF").with_help(
                if memory == Memory::Psum {
                    "copy it into SBUF first, with nl.copy"
                } else {
                    "load it into SBUF first, with nl.load"
                },
            ),
            StoreShape {
                value,
                dest,
                value_at,
                dest_at,
                ..
            } => d
                .with_label("shapes differ")
                .with_secondary(dest_at, format!("shape {}", show_shape(dest)))
                .with_secondary(value_at, format!("shape {}", show_shape(value))),
            ExpectedAluOp { .. } => d
                .with_label("not an `nl` arithmetic function")
                .with_note("the operations are nl.add, nl.subtract, nl.multiply, nl.divide, nl.maximum and nl.minimum"),
            ExpectedReduceOp { .. } => d
                .with_label("not nl.add, nl.maximum or nl.minimum")
                .with_note("a tensor_reduce sums (nl.add) or takes the maximum (nl.maximum) or minimum (nl.minimum)"),
            Op1WithoutOperand1 { .. } => d.with_label("given without the other"),
        }
    }
}
