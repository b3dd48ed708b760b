//! Argument binding and annotation keywords.
//!
//! [`Checker::bind_args`] matches a call's positional and keyword arguments against an operation's
//! parameter list, reporting unknown, duplicated and missing arguments and surplus positional ones.
//! It also takes the annotation keywords off every call:
//! - statement keywords (`stage_id`, `execution_order`: integers ≥ 0) are accepted only on the
//!   outermost call of a statement directly in a loop body, and on the range call of a nested loop;
//!   on a nested call they are an error, because a nested call takes its statement's stage;
//! - loop keywords (`num_stages` ≥ 1, `multi_buffer` ≥ 1, `disable_auto_buffer`,
//!   `disable_execution_order_check` booleans) are accepted only on range calls.
//!
//! The pipelining rules themselves (consecutive stages, permutations, legality) are checked later,
//! on Penguin IR, not here.

use super::Checker;
use crate::ast::{Expr, ExprKind, Keyword, Span};
use crate::codes;
use crate::diagnostic::Error;
use penguin::listing::capped_list;
use penguin::{AxisAttrs, StmtAnnot};

/// Where a call sits, which decides whether statement keywords may appear on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum KwSite {
    /// The outermost call of a statement directly in a loop body, or the range call of a loop
    /// directly in a loop body.
    Allowed,
    /// A call nested in another expression.
    Nested,
    /// The outermost call of a statement that is not in a loop body.
    NotInLoop,
}

pub(super) const STMT_KEYWORDS: [&str; 2] = ["stage_id", "execution_order"];
pub(super) const LOOP_KEYWORDS: [&str; 4] = [
    "num_stages",
    "disable_auto_buffer",
    "disable_execution_order_check",
    "multi_buffer",
];

/// One parameter of an operation: its name and whether it is required.
pub(super) type Param = (&'static str, bool);

impl Checker<'_> {
    /// Binds the arguments of a call to `params`, one slot per parameter. Returns `None` when an
    /// argument error was reported. Annotation keywords go to `annot` (and `attrs` for range
    /// calls, which pass `Some`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn bind_args<'e>(
        &mut self,
        op_name: &str,
        call_span: &Span,
        args: &'e [Expr],
        kwargs: &'e [Keyword],
        params: &[Param],
        site: KwSite,
        annot: &mut StmtAnnot,
        mut attrs: Option<&mut AxisAttrs>,
    ) -> Option<Vec<Option<&'e Expr>>> {
        let mut ok = true;
        let mut slots: Vec<Option<&Expr>> = vec![None; params.len()];
        let mut given_at: Vec<Option<Span>> = vec![None; params.len()];
        for (i, arg) in args.iter().enumerate() {
            if i < params.len() {
                slots[i] = Some(arg);
                given_at[i] = Some(arg.span.clone());
            } else {
                let names: Vec<&str> = params.iter().map(|p| p.0).collect();
                self.error(
                    Error::new(
                        codes::TOO_MANY_ARGUMENTS,
                        format!(
                            "`{op_name}` takes {} positional argument{} but {} were given",
                            params.len(),
                            if params.len() == 1 { "" } else { "s" },
                            args.len()
                        ),
                        arg.span.clone(),
                    )
                    .with_label("unexpected argument")
                    .with_note(format!(
                        "its parameters are ({})",
                        capped_list(&names, ", ")
                    )),
                );
                ok = false;
                break;
            }
        }
        let mut seen_kw: Vec<(&str, Span)> = Vec::new();
        for kw in kwargs {
            let name = kw.name.name.as_str();
            if let Some((_, first)) = seen_kw.iter().find(|(n, _)| *n == name) {
                self.error(
                    Error::new(
                        codes::DUPLICATE_ARGUMENT,
                        format!("keyword argument `{name}` is given twice"),
                        kw.name.span.clone(),
                    )
                    .with_label("repeated here")
                    .with_secondary(first.clone(), "first given here"),
                );
                ok = false;
                continue;
            }
            seen_kw.push((name, kw.name.span.clone()));
            if STMT_KEYWORDS.contains(&name) {
                self.stmt_keyword(kw, site, annot);
                continue;
            }
            if LOOP_KEYWORDS.contains(&name) {
                match attrs.as_deref_mut() {
                    Some(a) => self.loop_keyword(kw, a),
                    None => self.error(
                        Error::new(
                            codes::LOOP_KEYWORD_MISPLACED,
                            format!("`{name}` is a loop keyword; `{op_name}` does not take it"),
                            kw.span.clone(),
                        )
                        .with_label("only range calls take this")
                        .with_help(format!(
                            "write it on the loop: `for i in nl.affine_range(n, {name}=...)`"
                        )),
                    ),
                }
                continue;
            }
            match params.iter().position(|p| p.0 == name) {
                Some(i) => {
                    if let Some(first) = &given_at[i] {
                        self.error(
                            Error::new(
                                codes::DUPLICATE_ARGUMENT,
                                format!("argument `{name}` is given twice"),
                                kw.name.span.clone(),
                            )
                            .with_label("given again by keyword")
                            .with_secondary(first.clone(), "given here by position"),
                        );
                        ok = false;
                    } else {
                        slots[i] = Some(&kw.value);
                        given_at[i] = Some(kw.span.clone());
                    }
                }
                None => {
                    let names: Vec<&str> = params.iter().map(|p| p.0).collect();
                    let mut e = Error::new(
                        codes::UNKNOWN_KEYWORD,
                        format!("`{op_name}` has no argument `{name}`"),
                        kw.name.span.clone(),
                    )
                    .with_label("unknown keyword");
                    e = if names.is_empty() {
                        e.with_note(format!("`{op_name}` takes no argument"))
                    } else {
                        e.with_note(format!("its arguments are {}", names.join(", ")))
                    };
                    self.error(e);
                    ok = false;
                }
            }
        }
        for (i, &(pname, required)) in params.iter().enumerate() {
            if required && slots[i].is_none() && ok {
                self.error(
                    Error::new(
                        codes::MISSING_ARGUMENT,
                        format!("`{op_name}` is missing its argument `{pname}`"),
                        call_span.clone(),
                    )
                    .with_label(format!("`{pname}` is required")),
                );
                ok = false;
            }
        }
        ok.then_some(slots)
    }

    fn stmt_keyword(&mut self, kw: &Keyword, site: KwSite, annot: &mut StmtAnnot) {
        let name = kw.name.name.as_str();
        match site {
            KwSite::Allowed => {}
            KwSite::Nested => {
                self.error(
                    Error::new(
                        codes::STMT_KEYWORD_NESTED,
                        format!("`{name}` on a nested call"),
                        kw.span.clone(),
                    )
                    .with_label("this call is nested in another expression")
                    .with_note("a nested call belongs to the statement that holds it and takes that statement's stage and order")
                    .with_help(format!("move `{name}` to the outermost call of the statement")),
                );
                return;
            }
            KwSite::NotInLoop => {
                self.error(
                    Error::new(
                        codes::STMT_KEYWORD_NOT_IN_LOOP,
                        format!("`{name}` on a statement that is not in a loop body"),
                        kw.span.clone(),
                    )
                    .with_label("no enclosing loop to pipeline")
                    .with_note(
                        "stages and execution orders annotate the statements of a loop body",
                    ),
                );
                return;
            }
        }
        let Some(v) = self.annotation_int(kw, 0) else {
            return;
        };
        let v = Some(v);
        if name == "stage_id" {
            annot.stage_id = v;
        } else {
            annot.execution_order = v;
        }
    }

    fn loop_keyword(&mut self, kw: &Keyword, attrs: &mut AxisAttrs) {
        match kw.name.name.as_str() {
            "num_stages" => match &kw.value.kind {
                ExprKind::Str(s) if s == "auto" => attrs.auto_stages = true,
                ExprKind::Str(s) => self.error(
                    Error::new(
                        codes::BAD_ANNOTATION_VALUE,
                        format!(
                            "`num_stages` must be an integer from 1 to {} or \"auto\"",
                            u32::MAX
                        ),
                        kw.value.span.clone(),
                    )
                    .with_label(format!("the string \"{s}\""))
                    .with_help("write num_stages=\"auto\" to let the compiler choose the stages"),
                ),
                _ => attrs.num_stages = self.annotation_int(kw, 1),
            },
            "multi_buffer" => attrs.multi_buffer = self.annotation_int(kw, 1),
            "disable_auto_buffer" => {
                attrs.disable_auto_buffer = self.annotation_bool(kw).unwrap_or(false)
            }
            _ => attrs.disable_execution_order_check = self.annotation_bool(kw).unwrap_or(false),
        }
    }

    /// An integer annotation value from `min` to `u32::MAX` (the width of the IR's annotations;
    /// the message states both ends of the range).
    fn annotation_int(&mut self, kw: &Keyword, min: i64) -> Option<u32> {
        let name = &kw.name.name;
        let bad = |this: &mut Self, label: String| {
            this.error(
                Error::new(
                    codes::BAD_ANNOTATION_VALUE,
                    format!("`{name}` must be an integer from {min} to {}", u32::MAX),
                    kw.value.span.clone(),
                )
                .with_label(label),
            );
        };
        match &kw.value.kind {
            ExprKind::Bool(_)
            | ExprKind::Float(_)
            | ExprKind::None
            | ExprKind::Tuple(_)
            | ExprKind::Str(_) => {
                bad(self, "not an integer".into());
                None
            }
            ExprKind::Error => None,
            _ => {
                let v = self.const_int(&kw.value)?;
                if v < min || v > u32::MAX as i64 {
                    bad(self, format!("this is {v}"));
                    None
                } else {
                    Some(v as u32)
                }
            }
        }
    }

    fn annotation_bool(&mut self, kw: &Keyword) -> Option<bool> {
        match &kw.value.kind {
            ExprKind::Bool(b) => Some(*b),
            ExprKind::Error => None,
            _ => {
                self.error(
                    Error::new(
                        codes::BAD_ANNOTATION_VALUE,
                        format!("`{}` must be True or False", kw.name.name),
                        kw.value.span.clone(),
                    )
                    .with_label("not a boolean"),
                );
                None
            }
        }
    }
}
