//! How each [`CheckError`] becomes a diagnostic: its stable code ([`CheckError::code`]), its
//! primary span ([`CheckError::span`]), and `impl From<CheckError> for Diagnostic`, the one place
//! where a variant gets its labels, notes and help.
//!
//! Invariants: the three matches name every variant, with no wildcard arm, so a new variant does
//! not compile until its code, its span and its labels, notes and help are decided here; the
//! message is the variant's `Display` (`error.rs`), never rebuilt here.

use super::error::CheckError;
use super::not_in_nkc::not_in_nkc;
use super::show_shape;
use crate::ast::Span;
use crate::codes;
use penguin::listing::capped_list;
use penguin::{ActFunc, Memory};
use vocab::machine::{GEMM_MOVING_FMAX, GEMM_STATIONARY_FMAX, PMAX, PSUM_FMAX};
use vocab::Diagnostic;

impl CheckError {
    /// The stable code.
    pub fn code(&self) -> &'static str {
        use CheckError::*;
        match self {
            NotOnTiles { .. }
            | UnboundBuffer { .. }
            | NotIntOrTile { .. }
            | UnpackCount { .. }
            | UnpackNotTuple { .. }
            | UpdateScalar { .. }
            | UpdateNotOnTiles { .. }
            | OpFormUnsupported { .. } => codes::UNSUPPORTED,
            SlicedNkiMethod { .. } | SliceOfNonName { .. } | SubscriptOfScalar { .. } => {
                codes::NOT_SUBSCRIPTABLE
            }
            ExpectedTile { .. }
            | IntNotTile { .. }
            | ScalarNameNotTile { .. }
            | TransposeXNotBool { .. }
            | ExpectedAluOp { .. }
            | ExpectedReduceOp { .. }
            | ArangeArgs { .. }
            | VectorPlacement { .. }
            | VectorPlacedTwice { .. }
            | NotAVector { .. }
            | MgridItem { .. }
            | DsArgs { .. }
            | VectorAxis { .. }
            | NotAValue { .. } => codes::WRONG_ARGUMENT_KIND,
            ScalarNotTile { .. } | TwoScalars { .. } | BroadcastScalar { .. } => {
                codes::SCALAR_OPERAND
            }
            HbmOperand { .. } | BroadcastHbm { .. } => codes::HBM_OPERAND,
            TooManyPartitions { .. } => codes::TOO_MANY_PARTITIONS,
            AssignShape { .. } => codes::ASSIGN_SHAPE,
            HbmWrite { .. } | MemsetHbm { .. } | UpdateHbm { .. } => codes::HBM_WRITE,
            PsumWrite { .. } => codes::PSUM_WRITE,
            TensorEngineDst { .. } => codes::TENSOR_ENGINE_DST,
            ElementwiseShape { .. } | BadBroadcast { .. } => codes::ELEMENTWISE_SHAPE,
            NkiMethodCall { .. } | NotCallable { .. } => codes::NOT_CALLABLE,
            UnknownOp { .. } => codes::UNKNOWN_OP,
            TransposeLimit { .. } => codes::TRANSPOSE_LIMIT,
            ReduceAxis { .. } => codes::REDUCE_AXIS,
            StoreAsValue { .. } | UnusedResult { .. } | NoEffect { .. } => codes::UNUSED_OR_VOID,
            RangeAsValue { .. } | BadLoopIter { .. } => codes::BAD_LOOP_ITER,
            LoadNotHbm { .. } => codes::LOAD_NOT_HBM,
            MatmulNeedsTransposeX { .. } => codes::MATMUL_NEEDS_TRANSPOSE_X,
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
            | DimNotPositive { .. }
            | BadSpecShape { .. }
            | MgridShape { .. }
            | BadHbmShape { .. } => codes::BAD_SHAPE,
            ScalarDtype { .. } | UnsupportedDtype { .. } => codes::UNSUPPORTED_DTYPE,
            BadBuffer { .. } => codes::BAD_BUFFER,
            StoreNotHbm { .. } | StoreIntoParam { .. } => codes::STORE_DST,
            StoreValueNotSbuf { .. } => codes::STORE_VALUE_NOT_SBUF,
            StoreShape { .. } => codes::STORE_SHAPE,
            Op1WithoutOperand1 { .. } | MissingArgument { .. } | DmaCopyNoSrc { .. } => {
                codes::MISSING_ARGUMENT
            }
            DuplicateParam { .. } => codes::DUPLICATE_PARAM,
            ReturnNotLast { .. } | ReturnInLoop { .. } | ReturnVaries { .. } => {
                codes::MISPLACED_RETURN
            }
            NoReturn { .. } => codes::NO_RETURN,
            DefaultNotConst { .. }
            | IsNotNone { .. }
            | AndOfFloat { .. }
            | NotConst { .. }
            | NotATuple { .. }
            | NoneOperand { .. }
            | MathDomain { .. }
            | TileCondition { .. } => codes::NOT_CONST,
            UnspecialisedParam { .. } => codes::UNSPECIALISED_PARAM,
            BadParamType { .. } => codes::BAD_PARAM_TYPE,
            EmptyReturn { .. } | ReturnNotName { .. } | ReturnNotOutput { .. } => {
                codes::BAD_RETURN_VALUE
            }
            DuplicateReturn { .. } => codes::DUPLICATE_RETURN,
            AssignToParam { .. } => codes::ASSIGN_TO_PARAM,
            AssignToLoopVar { .. } => codes::ASSIGN_TO_LOOP_VAR,
            IntRebound { .. } | TileRebound { .. } => codes::KIND_CHANGE,
            RebindInLoop { .. } => codes::REBIND_IN_LOOP,
            AssertFailed { .. } => codes::ASSERT_FAILED,
            ShapeOfNonName { .. }
            | ShapeOfScalar { .. }
            | ShapeIndexCount { .. }
            | ShapeIndexRange { .. } => codes::BAD_SHAPE_ACCESS,
            UpdateTuple { .. } => codes::BAD_UPDATE,
            LoopVarShadows { .. } => codes::LOOP_VAR_SHADOWS,
            LoopBound { .. } => codes::LOOP_BOUND_RANGE,
            TripCount { .. } => codes::BAD_TRIP_COUNT,
            ReservedName { .. } => codes::RESERVED_NAME,
            LoopDependent { .. }
            | TileNotInt { .. }
            | ScalarNotInt { .. }
            | UnknownTileSize { .. }
            | FloatLiteralNotInt { .. }
            | FloatNotInt { .. }
            | NotInt { .. }
            | SubscriptNotInt { .. }
            | AttrNotInt { .. } => codes::NOT_CONST_INT,
            ConstOverflow { .. }
            | IndexOverflow { .. }
            | BuiltinOverflow { .. }
            | SliceOverflow { .. } => codes::CONST_OVERFLOW,
            ProductOfIvs { .. }
            | AndOfIv { .. }
            | DivOfIv { .. }
            | UnsupportedVector { .. }
            | AccessPattern { .. } => codes::NOT_AFFINE,
            IntTrueDivision { .. } => codes::INT_TRUE_DIVISION,
            IntDivisionByZero { .. } | FloatDivisionByZero { .. } => codes::DIVISION_BY_ZERO,
            ArangeRange { .. } | DsEmpty { .. } | EmptySlice { .. } => codes::EMPTY_SLICE,
            MaskUnsupported { .. } | MaskNotComparison { .. } => codes::PARTIAL_MASK,
            TooManyArguments { .. } | BuiltinArity { .. } | DmaCopyPositional { .. } => {
                codes::TOO_MANY_ARGUMENTS
            }
            DuplicateKeyword { .. } | DuplicateArgument { .. } => codes::DUPLICATE_ARGUMENT,
            LoopKeywordMisplaced { .. } => codes::LOOP_KEYWORD_MISPLACED,
            UnknownKeyword { .. } | BuiltinKeyword { .. } => codes::UNKNOWN_KEYWORD,
            StmtKeywordNested { .. } => codes::STMT_KEYWORD_NESTED,
            StmtKeywordNotInLoop { .. } => codes::STMT_KEYWORD_NOT_IN_LOOP,
            NumStagesString { .. } | AnnotationInt { .. } | AnnotationBool { .. } => {
                codes::BAD_ANNOTATION_VALUE
            }
            DuplicateKernel { .. } => codes::DUPLICATE_KERNEL,
            UnknownKernel { .. } => codes::UNKNOWN_KERNEL,
            Raised { .. } => codes::RAISED,
            NoKernel { .. } | SeveralKernels { .. } => codes::CHOOSE_KERNEL,
            BadModuleItem { .. } => codes::BAD_MODULE_ITEM,
            OutOfScope { .. } => codes::OUT_OF_SCOPE,
            UndefinedName { .. } => codes::UNDEFINED_NAME,
            HbmTooLarge { .. } => codes::HBM_TOO_LARGE,
            SbufTileTooLarge { .. } => codes::SBUF_TILE_TOO_LARGE,
            NdIndexCount { .. } | WrongIndexCount { .. } => codes::WRONG_INDEX_COUNT,
            SliceSizeNotConst { .. } => codes::SLICE_SIZE_NOT_CONST,
            IndexCoeffRange { .. } => codes::INDEX_COEFF_RANGE,
            SliceOutOfBounds { .. } => codes::SLICE_OUT_OF_BOUNDS,
            TensorEngineOperand { memory, .. } => {
                if *memory == Memory::Hbm {
                    codes::HBM_OPERAND
                } else {
                    codes::TENSOR_ENGINE_OPERAND
                }
            }
        }
    }

    /// The offending text.
    pub fn span(&self) -> &Span {
        use CheckError::*;
        match self {
            NotOnTiles { at, .. }
            | SlicedNkiMethod { at, .. }
            | SliceOfNonName { at, .. }
            | ExpectedTile { at, .. }
            | IntNotTile { at, .. }
            | ScalarNameNotTile { at, .. }
            | ScalarNotTile { at, .. }
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
            | NotCallable { at, .. }
            | TransposeLimit { at, .. }
            | ReduceAxis { at, .. }
            | StoreAsValue { at, .. }
            | RangeAsValue { at, .. }
            | LoadNotHbm { at, .. }
            | TransposeXNotBool { at, .. }
            | MatmulNeedsTransposeX { at, .. }
            | TensorEngineOperand { at, .. }
            | MatmulShape { at, .. }
            | MatmulLimit { at, .. }
            | ActivationFunc { at, .. }
            | ActivationColumn { at, .. }
            | ActivationScalarBias { at, .. }
            | UnboundBuffer { at, .. }
            | Bf16InPsum { at, .. }
            | PsumTooLarge { at, .. }
            | MemsetHbm { at, .. }
            | ShapeDims { at, .. }
            | ShapeNotTuple { at, .. }
            | ShapeArity { at, .. }
            | DimTooLarge { at, .. }
            | DimNotPositive { at, .. }
            | ScalarDtype { at, .. }
            | UnsupportedDtype { at, .. }
            | BadBuffer { at, .. }
            | StoreNotHbm { at, .. }
            | StoreIntoParam { at, .. }
            | StoreValueNotSbuf { at, .. }
            | StoreShape { at, .. }
            | ExpectedAluOp { at, .. }
            | ExpectedReduceOp { at, .. }
            | Op1WithoutOperand1 { at, .. }
            | DuplicateParam { at, .. }
            | ReturnNotLast { at, .. }
            | NoReturn { at, .. }
            | DefaultNotConst { at, .. }
            | UnspecialisedParam { at, .. }
            | BadSpecShape { at, .. }
            | BadParamType { at, .. }
            | EmptyReturn { at, .. }
            | ReturnNotName { at, .. }
            | ReturnNotOutput { at, .. }
            | DuplicateReturn { at, .. }
            | UnusedResult { at, .. }
            | NoEffect { at, .. }
            | ReturnInLoop { at, .. }
            | ReturnVaries { at, .. }
            | AssignToParam { at, .. }
            | AssignToLoopVar { at, .. }
            | IntRebound { at, .. }
            | TileRebound { at, .. }
            | RebindInLoop { at, .. }
            | NotIntOrTile { at, .. }
            | UnpackCount { at, .. }
            | UnpackNotTuple { at, .. }
            | AssertFailed { at, .. }
            | ShapeOfNonName { at, .. }
            | ShapeOfScalar { at, .. }
            | SubscriptOfScalar { at, .. }
            | UpdateScalar { at, .. }
            | UpdateTuple { at, .. }
            | UpdateHbm { at, .. }
            | UpdateNotOnTiles { at, .. }
            | OpFormUnsupported { at, .. }
            | LoopVarShadows { at, .. }
            | BadLoopIter { at, .. }
            | LoopBound { at, .. }
            | TripCount { at, .. }
            | ReservedName { at, .. }
            | LoopDependent { at, .. }
            | TileNotInt { at, .. }
            | ScalarNotInt { at, .. }
            | UnknownTileSize { at, .. }
            | FloatLiteralNotInt { at, .. }
            | FloatNotInt { at, .. }
            | NotInt { at, .. }
            | SubscriptNotInt { at, .. }
            | AttrNotInt { at, .. }
            | ConstOverflow { at, .. }
            | ProductOfIvs { at, .. }
            | IntTrueDivision { at, .. }
            | AndOfIv { at, .. }
            | DivOfIv { at, .. }
            | IntDivisionByZero { at, .. }
            | ShapeIndexCount { at, .. }
            | ShapeIndexRange { at, .. }
            | ArangeArgs { at, .. }
            | ArangeRange { at, .. }
            | VectorPlacement { at, .. }
            | VectorPlacedTwice { at, .. }
            | NotAVector { at, .. }
            | MgridItem { at, .. }
            | MgridShape { at, .. }
            | DsArgs { at, .. }
            | DsEmpty { at, .. }
            | VectorAxis { at, .. }
            | IndexOverflow { at, .. }
            | UnsupportedVector { at, .. }
            | AccessPattern { at, .. }
            | MaskUnsupported { at, .. }
            | MaskNotComparison { at, .. }
            | TooManyArguments { at, .. }
            | DuplicateKeyword { at, .. }
            | LoopKeywordMisplaced { at, .. }
            | DuplicateArgument { at, .. }
            | UnknownKeyword { at, .. }
            | MissingArgument { at, .. }
            | StmtKeywordNested { at, .. }
            | StmtKeywordNotInLoop { at, .. }
            | NumStagesString { at, .. }
            | AnnotationInt { at, .. }
            | AnnotationBool { at, .. }
            | IsNotNone { at, .. }
            | AndOfFloat { at, .. }
            | NotConst { at, .. }
            | NotATuple { at, .. }
            | NoneOperand { at, .. }
            | FloatDivisionByZero { at, .. }
            | BuiltinKeyword { at, .. }
            | BuiltinArity { at, .. }
            | BuiltinOverflow { at, .. }
            | MathDomain { at, .. }
            | TileCondition { at, .. }
            | BroadcastScalar { at, .. }
            | BroadcastHbm { at, .. }
            | BadBroadcast { at, .. }
            | DmaCopyNoSrc { at, .. }
            | DmaCopyPositional { at, .. }
            | DuplicateKernel { at, .. }
            | UnknownKernel { at, .. }
            | Raised { at, .. }
            | NoKernel { at, .. }
            | SeveralKernels { at, .. }
            | BadModuleItem { at, .. }
            | NotAValue { at, .. }
            | OutOfScope { at, .. }
            | UndefinedName { at, .. }
            | HbmTooLarge { at, .. }
            | SbufTileTooLarge { at, .. }
            | NdIndexCount { at, .. }
            | SliceOverflow { at, .. }
            | BadHbmShape { at, .. }
            | WrongIndexCount { at, .. }
            | SliceSizeNotConst { at, .. }
            | EmptySlice { at, .. }
            | IndexCoeffRange { at, .. }
            | SliceOutOfBounds { at, .. } => at,
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
                .with_label(format!("written by `{op}`"))
                .with_note("PSUM is written by the Tensor engine (matmul, transpose) and by the elementwise operations, activations, reductions and copies of the Vector and Scalar engines")
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
                .with_label("x is too large to transpose")
                .with_note("the Tensor engine computes x.T @ y with x given as [K, M]; without transpose_x=True, x is [M, K] and is transposed on the Tensor engine first, at most 128 x 128")
                .with_help("pass x transposed ([K, M]) with transpose_x=True, or split the matmul into blocks of at most 128 rows and columns of x"),
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
                .with_label("stored into here, so it is an output")
                .with_help("a parameter the kernel stores into is an output, whose contents on entry nkc does not read: make the output with nl.ndarray(..., buffer=nl.shared_hbm) and return it, or do not read the parameter"),
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
            DuplicateParam { first, .. } => d
                .with_label("declared again here")
                .with_secondary(first, "first declared here"),
            ReturnNotLast { .. } => d.with_label("statements follow this return"),
            NoReturn { .. } => d.with_label("returns nothing").with_help(
                "make the outputs with nl.ndarray(..., buffer=nl.shared_hbm) and return them, or store into an output parameter",
            ),
            DefaultNotConst { .. } => d
                .with_label("not a number or a boolean")
                .with_note("a parameter with a default is a compile-time scalar (`eps=1e-5`, `n=4`, `flag=True`); tensors are parameters without a default"),
            UnspecialisedParam { name, .. } => d
                .with_label("a shape-generic input")
                .with_note("a kernel is specialised for the shapes of its inputs when it is run")
                .with_help(format!(
                    "give `--input {name}=FILE.npy` or `--shape {name}=ROWSxCOLS` (with `--dtype`), or write `{name}: nl.hbm[nl.float32, ROWS, COLS]`"
                )),
            BadSpecShape { .. } => d
                .with_label("specialised with this shape")
                .with_help("merge dimensions into fewer"),
            BadParamType { param, .. } => d
                .with_label("not an HBM array type")
                .with_help(format!("write `{param}: nl.hbm[nl.float32, ROWS, COLS]`")),
            EmptyReturn { .. } => d
                .with_label("returns nothing")
                .with_help("return the arrays made with nl.ndarray(..., buffer=nl.shared_hbm)"),
            ReturnNotName { .. } => d
                .with_label("not a name")
                .with_help("bind the array to a name with nl.ndarray(..., buffer=nl.shared_hbm), then return the name"),
            ReturnNotOutput { .. } => d
                .with_label("cannot be returned")
                .with_help("return arrays made with nl.ndarray(..., buffer=nl.shared_hbm)"),
            DuplicateReturn { first, .. } => d
                .with_label("returned again")
                .with_secondary(first, "first returned here"),
            UnusedResult { .. } => d
                .with_label("result discarded")
                .with_help("bind it to a name: `t = ...`"),
            NoEffect { .. } => d.with_label("a statement that has no effect"),
            ReturnInLoop { .. } => d
                .with_label("not at the end of the kernel")
                .with_help("return the output arrays once, as the kernel's last statement, or as the last statement of an `nl.affine_range` loop's body at the kernel's level"),
            ReturnVaries { .. } => d
                .with_label("depends on the loop index")
                .with_note("the loop is traced once, as NKI traces it: the `return` at the end of its body returns one value for every iteration")
                .with_help("return the whole output array, after the loop"),
            AssignToParam { prev, .. } => d
                .with_label("assigned here")
                .with_secondary(prev, "a parameter of the kernel")
                .with_help("parameters are read-only inputs; bind the result to a new name"),
            AssignToLoopVar { prev, .. } => d
                .with_label("assigned here")
                .with_secondary(prev, "the loop variable")
                .with_help("bind the value to a new name"),
            IntRebound { prev, .. } => d
                .with_label("bound to a tile here")
                .with_secondary(prev, "bound to an integer here")
                .with_help("use a new name for the tile"),
            TileRebound { prev, .. } => d
                .with_label("bound to an integer here")
                .with_secondary(prev, "bound to a tile here")
                .with_help("use a new name for the integer"),
            RebindInLoop { prev, .. } => d
                .with_label("rebound in the loop body")
                .with_secondary(prev, "bound outside the loop here")
                .with_note("a binding in a loop body is local to one iteration; it would not carry over to the next one as it does in Python")
                .with_help("use a new name; to carry a tile across iterations, update a buffer in place (`+=` or slice assignment); for an offset, compute it from the loop variable (`off = i * 128`)"),
            NotIntOrTile { .. } => d.with_label("neither an integer nor a tile"),
            UnpackCount { .. } => d.with_label("different counts"),
            UnpackNotTuple { .. } => d
                .with_label("not a tuple")
                .with_help("write `rows, cols = x.shape`, or `a, b = 1, 2`"),
            AssertFailed {
                assert_at,
                says,
                missing_dtype,
                ..
            } => d
                .with_label("this is false for the shapes and parameters of this kernel")
                .with_secondary(assert_at, "in this assert")
                .with_note_opt(says.map(|text| format!("the assertion says: {text}")))
                .with_help_opt(missing_dtype.map(|name| {
                    let what = if name.contains(',') {
                        "dtypes nkc does not have"
                    } else {
                        "a dtype nkc does not have"
                    };
                    format!(
                        "the condition asks for `{name}`, {what}: tensors are float32 or \
                         bfloat16 (`nkc explain E0170`), so no input can satisfy it"
                    )
                })),
            ShapeOfNonName { .. } => d.with_label("not a tensor name"),
            ShapeOfScalar { .. } | SubscriptOfScalar { .. } => d.with_label("not a tensor"),
            UpdateScalar { .. } => d
                .with_label("updated here")
                .with_help("bind the new value to a new name"),
            UpdateTuple { .. } => d
                .with_label("a tuple of names")
                .with_help("update each name on its own line"),
            UpdateHbm { .. } => d
                .with_label("updated in place here")
                .with_help("accumulate in an SBUF or PSUM buffer, then nl.store it"),
            UpdateNotOnTiles { .. } => d.with_label("tiles support `+= -= *= /=`"),
            LoopVarShadows { prev, .. } => d
                .with_label("bound again here")
                .with_secondary(prev, "bound here")
                .with_help("choose another name for the loop variable"),
            BadLoopIter { .. } => d
                .with_label("not nl.affine_range, nl.sequential_range or range")
                .with_help("write `for i in nl.affine_range(n):`"),
            LoopBound { lb, ub, .. } => d
                .with_label(format!("range from {lb} to {ub}"))
                .with_help("count the loop from 0 and add the offset in the index expressions"),
            TripCount { lb, ub, .. } => d.with_label(format!("range from {lb} to {ub}")),
            ReservedName { .. } => d.with_label("reserved name"),
            LoopDependent { shown, .. } => {
                d.with_label(format!("this is `{shown}`, which changes with the loop"))
            }
            TileNotInt { .. } => d.with_label("a tile, not an integer").with_note(
                "indices and sizes are compile-time integers or affine in loop variables; a tile's \
                 values as the index of a load or store (an indirect DMA, a gather) are not \
                 modelled: compute the index from `nl.arange`/loop variables, or load the rows \
                 with a static loop over them",
            ),
            ScalarNotInt { .. } => d
                .with_label("a float or a boolean, not an integer")
                .with_help("convert it with `int(...)` or `math.ceil(...)`"),
            UnknownTileSize { .. } => d.with_label("unknown tile size").with_note(format!(
                "the tile sizes are pmax ({PMAX}), psum_fmax ({PSUM_FMAX}), gemm_stationary_fmax ({GEMM_STATIONARY_FMAX}) and gemm_moving_fmax ({GEMM_MOVING_FMAX})"
            )),
            FloatLiteralNotInt { .. } => d.with_label("a float literal"),
            FloatNotInt { .. } => d
                .with_label("this is a float")
                .with_help("convert it with `int(...)` or `math.ceil(...)`"),
            NotInt { .. } | AttrNotInt { .. } => d.with_label("not an integer expression"),
            SubscriptNotInt { .. } => {
                d.with_label("a subscript of a tensor is a tile, not an integer")
            }
            ConstOverflow { .. } | IndexOverflow { .. } => {
                d.with_label("this overflows a 64-bit integer")
            }
            ProductOfIvs { shown, .. } => d
                .with_label(format!("this multiplies {shown}"))
                .with_note("indices must be affine: sums of loop variables times constants"),
            IntTrueDivision { .. } => d
                .with_label("float division of integers")
                .with_help("use //"),
            AndOfIv { .. } => d
                .with_label("depends on a loop variable")
                .with_note("`&` needs compile-time integer operands"),
            DivOfIv { .. } => d
                .with_label("depends on a loop variable")
                .with_note("`//` and `%` need compile-time integer operands"),
            IntDivisionByZero { .. } | FloatDivisionByZero { .. } => d.with_label("this is zero"),
            ShapeIndexCount { .. } => d.with_label("expected `[0]` or `[1]`"),
            ShapeIndexRange { rank, .. } => d.with_label(if rank == 2 {
                "index must be 0 or 1".to_string()
            } else {
                format!("index must be 0 to {}", rank - 1)
            }),
            ArangeArgs { .. } => d
                .with_label("a step or other arguments")
                .with_note("index vectors are contiguous: a step would be a strided access pattern, which nkc does not have"),
            ArangeRange { start, stop, .. } => d.with_label(if stop <= start {
                "no index"
            } else {
                "too many indices"
            }),
            VectorPlacement { .. } => d.with_label(
                "another subscript of an index vector (one `:` among `None`s places it: `[None, :, None]`)",
            ),
            VectorPlacedTwice { .. } => d.with_label("placed twice"),
            NotAVector { .. } => {
                d.with_label("not `nl.arange(n)[:, None]` or `nl.arange(n)[None, :]`")
            }
            MgridItem { .. } => d.with_label("not a range with a stop"),
            MgridShape { .. } => d.with_label("an empty or too long range"),
            DsArgs { .. } => d.with_label("wrong arguments"),
            DsEmpty { .. } => d.with_label("the size of `nl.ds` must be positive"),
            VectorAxis { axis, dim, .. } => d
                .with_label(format!(
                    "placed with `{}`",
                    if axis == 0 { "[:, None]" } else { "[None, :]" }
                ))
                .with_help(if dim == 0 {
                    "index the first dimension with `nl.arange(n)[:, None]`"
                } else {
                    "index the second dimension with `nl.arange(n)[None, :]`"
                })
                .with_note(
                    "swapping the vectors (`x[i_f, i_p]`) would transpose in the DMA, which nkc's \
                     loads and stores do not do: transpose on chip (`nisa.nc_transpose(t)` or \
                     `nl.transpose(t)`, at most 128x128 per call) and store it with `x[i_p, i_f]`, \
                     or load with `nl.load_transpose2d`",
                ),
            AccessPattern { why, help, .. } => d.with_label(why).with_help(help.to_string()),
            UnsupportedVector { why, .. } => d.with_label(why).with_help(
                "write `offset + nl.arange(n)[:, None]` (or `[None, :]`), or a slice `lo:hi`",
            ),
            OpFormUnsupported { help, .. } => d.with_label("not modelled").with_help(help),
            MaskUnsupported { .. } => d
                .with_label("this mask")
                .with_note("a mask keeps a box of the tile (each comparison bounds one index vector: `i * 128 + i_p < n`, `i_f >= k`, joined with `&`), or the elements below a flattened row-major offset (`512 * i_p + i_f < n`)")
                .with_help("write `mask=(i * 128 + i_p < n) & (j * 512 + i_f < m)`"),
            MaskNotComparison { .. } => d
                .with_label("not a comparison")
                .with_help("write `mask=(i * 128 + i_p < n)`"),
            TooManyArguments { params, .. } => d
                .with_label("unexpected argument")
                .with_note(format!("its parameters are ({})", capped_list(&params, ", "))),
            DuplicateKeyword { first, .. } => d
                .with_label("repeated here")
                .with_secondary(first, "first given here"),
            LoopKeywordMisplaced { name, .. } => d
                .with_label("only range calls take this")
                .with_help(format!(
                    "write it on the loop: `for i in nl.affine_range(n, {name}=...)`"
                )),
            DuplicateArgument { first, .. } => d
                .with_label("given again by keyword")
                .with_secondary(first, "given here by position"),
            UnknownKeyword { op, params, .. } => {
                let d = d.with_label("unknown keyword");
                if params.is_empty() {
                    d.with_note(format!("`{op}` takes no argument"))
                } else {
                    d.with_note(format!("its arguments are {}", params.join(", ")))
                }
            }
            MissingArgument { param, .. } => d.with_label(format!("`{param}` is required")),
            StmtKeywordNested { name, .. } => d
                .with_label("this call is nested in another expression")
                .with_note("a nested call belongs to the statement that holds it and takes that statement's stage and order")
                .with_help(format!("move `{name}` to the outermost call of the statement")),
            StmtKeywordNotInLoop { .. } => d
                .with_label("no enclosing loop to pipeline")
                .with_note("stages and execution orders annotate the statements of a loop body"),
            NumStagesString { text, .. } => d
                .with_label(format!("the string \"{text}\""))
                .with_help("write num_stages=\"auto\" to let the compiler choose the stages"),
            AnnotationInt { label, .. } => d.with_label(label),
            AnnotationBool { .. } => d.with_label("not a boolean"),
            IsNotNone { .. } => d
                .with_label("neither side is None")
                .with_help("compare numbers with `==` / `!=`"),
            AndOfFloat { .. } => d.with_label("`&` takes booleans or integers"),
            NotConst { .. } => d
                .with_label("not a number or a boolean known before the kernel runs")
                .with_note("conditions and scalar values are evaluated when the kernel is compiled, as NKI's tracing does"),
            NotATuple { .. } => d
                .with_label("not a shape or a tuple")
                .with_note("a shape compares with a shape (`a.shape == b.shape`) or a tuple (`a.shape == (128, 512)`)"),
            NoneOperand { .. } => d
                .with_label("an operand is None")
                .with_help("test it first: `if x is None: x = ...`"),
            BuiltinKeyword { .. } => d.with_label("unexpected keyword"),
            BuiltinArity { .. } => d.with_label("wrong number of arguments"),
            BuiltinOverflow { .. } => d.with_label("out of range"),
            MathDomain { .. } => d.with_label("math domain error"),
            TileCondition { what, .. } => d
                .with_label("computed on the device")
                .with_note(format!(
                    "`{what}` is decided when the kernel is compiled, from shapes, dtypes and scalar parameters"
                ))
                .with_note("NKI's tracer does not read the tile's values either: it takes the tile object as true whatever they are, so this condition never depends on the data (an HBM tensor, such as an optional parameter, is true here as there)")
                .with_help("to choose between tiles element by element, use a mask or nl.maximum / nl.minimum"),
            BroadcastScalar { .. } => d
                .with_label("a scalar")
                .with_help("make the tile with nl.full(shape, value, dtype=nl.float32)"),
            BroadcastHbm { .. } => d
                .with_label("in HBM")
                .with_help("load it into SBUF first, with nl.load"),
            BadBroadcast { .. } => d
                .with_label("not a broadcast of an axis of size 1")
                .with_note(format!(
                    "a [1, F] row broadcasts to [P, F] (P ≤ {PMAX}, F ≤ {PSUM_FMAX}), a [P, 1] column to [P, F]"
                )),
            DmaCopyNoSrc { .. } => d
                .with_label("no source")
                .with_help("write `nisa.dma_copy(dst=..., src=...)`"),
            DmaCopyPositional { .. } => d.with_label("a third positional argument"),
            DuplicateKernel { first, .. } => d
                .with_label("defined again here")
                .with_secondary(first, "first defined here"),
            UnknownKernel { kernels, .. } => {
                if kernels.is_empty() {
                    d.with_note("the file defines no kernel")
                } else {
                    d.with_note(format!("the kernels are {}", capped_list(&kernels, ", ")))
                }
            }
            Raised { .. } => d
                .with_label("raised here, while the kernel's Python ran at compile time")
                .with_help("run the kernel with arguments (shapes, dtypes, parameters) for which this `raise` is not reached"),
            NoKernel { .. } => {
                d.with_help("define one with `def name(a: nl.hbm[nl.float32, ROWS, COLS]): ...`")
            }
            SeveralKernels { kernels, .. } => d
                .with_label("another kernel")
                .with_note(format!("the kernels are {}", capped_list(&kernels, ", "))),
            BadModuleItem { .. } => {
                d.with_help("write `NAME = INTEGER` here, or move the statement into a kernel")
            }
            NotAValue { .. } => d.with_label("a module or builtin, used as a value"),
            OutOfScope { def, why, .. } => {
                use super::loop_scope::LoopExit;
                let d = d.with_label("used here, after the loop");
                match why {
                    LoopExit::LoopVar => d
                        .with_secondary(def, "the loop variable of this loop")
                        .with_note("a loop variable exists only in its loop's body"),
                    LoopExit::Varies { iv } => d
                        .with_secondary(def, format!("bound here to a value that depends on `{iv}`, the loop's index"))
                        .with_note("a hardware loop's body is traced once, as NKI does: a name it binds keeps its value after the loop only when that value is the same in every iteration, and this one differs per iteration")
                        .with_help(format!("use it inside the loop, or bind it again after the loop without `{iv}` (for example with the last iteration's index written out)")),
                    LoopExit::BodyTile => d
                        .with_secondary(def, "bound here to a tile the loop's body allocates, one per iteration")
                        .with_note("after the loop it would hold the last iteration's data, which nkc does not keep")
                        .with_help("bind a buffer before the loop (`nl.ndarray` or `nl.zeros`) and write into it inside (`+=` or slice assignment)"),
                }
            }
            UndefinedName { .. } => d.with_label("not defined"),
            HbmTooLarge {
                tensor,
                shape,
                elems,
                ..
            } => d
                .with_label(format!(
                    "`{tensor}` of shape {} holds {elems} elements",
                    show_shape(shape)
                ))
                .with_note("the parameters and the nl.shared_hbm arrays count together; the simulator and the interpreter hold them all in memory")
                .with_help("run the kernel on a smaller problem"),
            SbufTileTooLarge { tensor, .. } => d
                .with_label(format!("`{tensor}` is larger than SBUF"))
                .with_help("split the columns into tiles (a loop over column blocks)"),
            NdIndexCount { name, dims, .. } => d
                .with_label(format!("`{name}` is {dims:?}"))
                .with_help("give one index or slice per dimension (fewer select whole trailing dimensions)"),
            SliceOverflow { .. } => d.with_label("this overflows a 64-bit integer"),
            BadHbmShape { .. } => d
                .with_label("dimensions of at least 1, whose leading ones multiply to at most 2^24")
                .with_help("merge dimensions into fewer"),
            WrongIndexCount { .. } => d
                .with_label("expected `[rows, columns]`")
                .with_help("use `:` for a whole axis, as in `a[0:128, :]`"),
            SliceSizeNotConst { shown, .. } => d
                .with_label(format!("this slice has size `{shown}`"))
                .with_help("write both bounds with the same loop terms, as in `i * 128:(i + 1) * 128`"),
            EmptySlice { .. } => d.with_label("the upper bound must exceed the lower bound"),
            IndexCoeffRange { start, .. } => d.with_label(format!("starts at `{start}`")),
            SliceOutOfBounds { shown, size, .. } => {
                d.with_label(format!("starts at `{shown}`, size {size}"))
            }
        }
    }
}
