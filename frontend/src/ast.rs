//! The abstract syntax tree of the kernel language.
//!
//! The tree mirrors the Python subset of `LANGUAGE.md` and nothing more: it knows no NKI names, no
//! shapes and no types. Every node keeps the byte span of the source text it came from, so that any
//! later check can point at it.
//!
//! Invariants:
//! - every span is a byte range into the one source file the tree was parsed from, with
//!   `start <= end`;
//! - a node built by error recovery is an explicit `Error` variant (`StmtKind::Error`,
//!   `StmtKind::Recovered`, `ExprKind::Error`). A tree that holds one was parsed with at least one syntax diagnostic, and
//!   the semantic checks skip such nodes without reporting anything new about them.

use std::fmt;

/// A byte range in the source file.
pub type Span = std::ops::Range<usize>;

/// A name with the span where it is written.
#[derive(Clone, Debug, PartialEq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A whole `.nk` file.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    /// Module-level statements other than kernels: compile-time integer bindings (`N = 128`).
    /// Anything else found here is reported by the checks.
    pub items: Vec<Stmt>,
    pub kernels: Vec<Kernel>,
}

/// `def name(params): body`
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: Ident,
    /// The decorator expressions written above the `def` (`@nki.jit`), in order.
    pub decorators: Vec<Expr>,
    pub params: Vec<Param>,
    pub body: Vec<Stmt>,
    /// From `def` to the end of the body.
    pub span: Span,
}

impl Kernel {
    /// Whether a decorator marks the function as an NKI kernel (`@nki.jit`, `@nki.baremetal`,
    /// `@nki.trace(...)`, ...), rather than a helper or a test.
    pub fn is_nki_kernel(&self) -> bool {
        fn names(e: &Expr) -> Option<&str> {
            match &e.kind {
                ExprKind::Name(n) => Some(n),
                ExprKind::Attribute { attr, .. } => Some(&attr.name),
                ExprKind::Call { func, .. } => names(func),
                _ => None,
            }
        }
        self.decorators.iter().any(|d| {
            matches!(
                names(d),
                Some("jit" | "baremetal" | "benchmark" | "simulate_kernel" | "trace" | "profile")
            )
        })
    }
}

/// `@decorators class name(bases): body`.
#[derive(Clone, Debug, PartialEq)]
pub struct ClassDef {
    pub name: Ident,
    pub decorators: Vec<Expr>,
    pub bases: Vec<Expr>,
    pub body: Vec<Stmt>,
    /// From `class` to the end of the body.
    pub span: Span,
}

/// `name: annotation = default`, where the annotation is an expression such as
/// `nl.hbm[nl.float32, 128, 512]`. A parameter without an annotation or default (`ty: None`) is a
/// shape-generic HBM input, specialised from the inputs of a run; one with a default is a
/// compile-time scalar (an integer, a float or a boolean).
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: Ident,
    pub ty: Option<Expr>,
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    /// `target = value`
    Assign { target: Target, value: Expr },
    /// `target op= value`, with `op` one of `+ - * /`.
    AugAssign {
        target: Target,
        op: BinOp,
        value: Expr,
    },
    /// A bare expression, normally a call such as `nl.store(...)`.
    Expr(Expr),
    /// `a = b = value`: every target bound to the one value.
    MultiAssign { targets: Vec<Target>, value: Expr },
    /// `for target in iter: body`
    For {
        target: Target,
        iter: Expr,
        body: Vec<Stmt>,
    },
    /// `return a` or `return a, b` (also `return (a, b)`); empty for a bare `return`.
    Return(Vec<Expr>),
    /// `pass`, and statements that do nothing in a kernel: docstrings.
    Pass,
    /// `import a.b.c [as d]` (one entry per name) or `from a.b import c [as d]`: each entry is the
    /// dotted path imported and the name it is bound to.
    Import(Vec<(Vec<String>, Ident)>),
    /// `def name(params): body` inside a block or at module level: a helper function.
    Def(std::rc::Rc<Kernel>),
    /// `while test: body`
    While { test: Expr, body: Vec<Stmt> },
    /// A statement of Python that nkc does not run (`with`, `try`, `del`, ...), with
    /// its block, kept with its keyword: running one is a diagnostic, but it may stand where it
    /// never runs (a test class beside the kernel).
    Opaque(String),
    /// `break`
    Break,
    /// `continue`
    Continue,
    /// `assert test` or `assert test, message`.
    Assert { test: Expr, msg: Option<Expr> },
    /// `class Name(bases): body`, with the decorators written above it (`@dataclass`).
    Class(std::rc::Rc<ClassDef>),
    /// `raise` or `raise exc` (`raise ValueError(f"...")`; a `from cause` is dropped).
    Raise(Option<Expr>),
    /// `name: annotation` with no value: declares a field in a class body (`x: int`), does
    /// nothing elsewhere.
    Declare(Ident),
    /// `if test: body else: orelse` (`elif` is an `If` alone in `orelse`).
    If {
        test: Expr,
        body: Vec<Stmt>,
        orelse: Vec<Stmt>,
    },
    /// A statement that failed to parse. A syntax diagnostic has been reported for it.
    Error,
    /// A statement that failed to parse but visibly binds names (`a, b = broken +`): a syntax
    /// diagnostic has been reported for it, and the checks bind the names to nothing, so that
    /// their uses later in the file are silent while the rest of it is still checked.
    Recovered { binds: Vec<Ident> },
}

/// The left-hand side of an assignment.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// `name = ...`
    Name(Ident),
    /// `name[indices] = ...`
    Subscript {
        base: Ident,
        indices: Vec<Index>,
        span: Span,
    },
    /// `a, b = ...` (also `(a, b) = ...`): tuple unpacking into names.
    Tuple { names: Vec<Ident>, span: Span },
    /// Any other unpacking: nested tuples, subscripts and at most one `*rest` per level.
    Seq { items: Vec<Target>, span: Span },
    /// `*rest` inside a [`Target::Seq`].
    Starred(Ident),
    /// `value.attr = ...`: an attribute of a Python object (`self.offset = 0`).
    Attribute {
        value: Box<Expr>,
        attr: Ident,
        span: Span,
    },
}

impl Target {
    pub fn span(&self) -> Span {
        match self {
            Target::Name(id) => id.span.clone(),
            Target::Subscript { span, .. }
            | Target::Attribute { span, .. }
            | Target::Tuple { span, .. }
            | Target::Seq { span, .. } => span.clone(),
            Target::Starred(id) => id.span.clone(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: Span,
}

impl Expr {
    /// `NAME` when the expression is `M.NAME` for a module `M` of `modules` (`nl.add` with
    /// `["nl"]` gives `add`).
    pub fn attr_of(&self, modules: &[&str]) -> Option<&str> {
        match &self.kind {
            ExprKind::Attribute { value, attr } if matches!(&value.kind, ExprKind::Name(m) if modules.contains(&m.as_str())) => {
                Some(attr.name.as_str())
            }
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    Name(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    None,
    /// A string literal (its text without the quotes).
    Str(String),
    /// `...`
    Ellipsis,
    /// `value.attr`, as in `nl.float32` or `x.shape`.
    Attribute {
        value: Box<Expr>,
        attr: Ident,
    },
    /// `func(args, name=value, ...)`
    Call {
        func: Box<Expr>,
        args: Vec<Expr>,
        kwargs: Vec<Keyword>,
    },
    /// `value[indices]`: a tile slice, `x.shape[0]` or a type such as `nl.hbm[...]`.
    Subscript {
        value: Box<Expr>,
        indices: Vec<Index>,
    },
    /// `(a, b)` or `a, b` where a tuple is allowed.
    Tuple(Vec<Expr>),
    /// `[a, b]`: a Python list (as an operation's argument, the same as a tuple).
    List(Vec<Expr>),
    /// `{k: v, ...}`
    Dict(Vec<(Expr, Expr)>),
    /// `*e` in a call's arguments or in a tuple or list display.
    Starred(Box<Expr>),
    /// `f"...{e}..."`: literal text and formatted expressions, in order.
    FStr(Vec<FPart>),
    /// `body if test else orelse`
    IfExp {
        test: Box<Expr>,
        body: Box<Expr>,
        orelse: Box<Expr>,
    },
    /// `[elt for v in iter if cond ...]` (a list comprehension; also a generator in a call).
    ListComp {
        elt: Box<Expr>,
        gens: Vec<CompFor>,
    },
    /// `lambda params: body`
    Lambda {
        params: Vec<Param>,
        body: Box<Expr>,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    /// `lhs OP rhs` with a comparison operator.
    Compare {
        op: CmpOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `lhs and rhs`, `lhs or rhs`.
    BoolOp {
        and: bool,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `not operand`
    Not(Box<Expr>),
    /// An expression that failed to parse. A syntax diagnostic has been reported for it.
    Error,
}

/// One part of an f-string.
#[derive(Clone, Debug, PartialEq)]
pub enum FPart {
    Lit(String),
    /// `{expr}` or `{expr:spec}`, with `!r`/`!s` conversions dropped.
    Expr(Expr, Option<String>),
}

/// `for target in iter if cond ...` in a comprehension.
#[derive(Clone, Debug, PartialEq)]
pub struct CompFor {
    pub target: Target,
    pub iter: Expr,
    pub conds: Vec<Expr>,
}

/// `name=value` in a call.
#[derive(Clone, Debug, PartialEq)]
pub struct Keyword {
    pub name: Ident,
    pub value: Expr,
    pub span: Span,
}

/// One entry between the brackets of a subscript.
#[derive(Clone, Debug, PartialEq)]
pub enum Index {
    /// `e`
    Expr(Expr),
    /// `lo:hi`, either bound optional (`:` alone selects the whole axis).
    Slice {
        lo: Option<Expr>,
        hi: Option<Expr>,
        /// `lo:hi:step`
        step: Option<Box<Expr>>,
        span: Span,
    },
}

impl Index {
    pub fn span(&self) -> Span {
        match self {
            Index::Expr(e) => e.span.clone(),
            Index::Slice { span, .. } => span.clone(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    /// `/`
    Div,
    /// `//`
    FloorDiv,
    /// `%`
    Mod,
    /// `&`: of booleans (masks, conditions) or of compile-time integers.
    BitAnd,
    /// `|`
    BitOr,
    /// `^`: of booleans or of compile-time integers.
    BitXor,
    /// `<<`, of compile-time integers.
    Shl,
    /// `>>`, of compile-time integers (arithmetic: toward negative infinity).
    Shr,
    /// `**`
    Pow,
    /// `@`: parsed so that the Python beside a kernel (a driver's `A.T @ B`) parses; evaluating
    /// it is a diagnostic (E0016). The span of an `@` expression is its operator's.
    MatMul,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::FloorDiv => "//",
            BinOp::Mod => "%",
            BinOp::BitAnd => "&",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::BitOr => "|",
            BinOp::Pow => "**",
            BinOp::MatMul => "@",
        }
    }
}

impl fmt::Display for BinOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    /// `is`, `is not`: only against `None`.
    Is,
    IsNot,
    /// `in`, `not in`: membership in a compile-time container.
    In,
    NotIn,
}

impl CmpOp {
    /// The operator of its source text (`"<="`), as the lexer cuts it.
    pub fn from_symbol(s: &str) -> Option<CmpOp> {
        Some(match s {
            "==" => CmpOp::Eq,
            "!=" => CmpOp::Ne,
            "<" => CmpOp::Lt,
            ">" => CmpOp::Gt,
            "<=" => CmpOp::Le,
            ">=" => CmpOp::Ge,
            _ => return None,
        })
    }

    /// Applies the comparison.
    pub fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Gt => a > b,
            CmpOp::Le => a <= b,
            CmpOp::Ge => a >= b,
            // Identity of two values known at compile time: their equality.
            CmpOp::Is => a == b,
            CmpOp::IsNot => a != b,
            // Membership is decided by the evaluator, never on two scalars.
            CmpOp::In | CmpOp::NotIn => false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    Pos,
    /// `~x`: the bitwise inversion of an integer (`-x - 1`), or of a tile as `nl.invert`.
    Invert,
}

impl UnaryOp {
    /// The operator as Python writes it.
    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::Pos => "+",
            UnaryOp::Invert => "~",
        }
    }
}
