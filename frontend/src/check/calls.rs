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

use super::error::CheckError;
use super::Checker;
use crate::ast::{Expr, ExprKind, Keyword, Span};
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
                self.error(CheckError::TooManyArguments {
                    op: op_name.to_string(),
                    params: params.iter().map(|p| p.0).collect(),
                    given: args.len(),
                    at: arg.span.clone(),
                });
                ok = false;
                break;
            }
        }
        let mut seen_kw: Vec<(&str, Span)> = Vec::new();
        for kw in kwargs {
            let name = kw.name.name.as_str();
            if let Some((_, first)) = seen_kw.iter().find(|(n, _)| *n == name) {
                self.error(CheckError::DuplicateKeyword {
                    name: name.to_string(),
                    first: first.clone(),
                    at: kw.name.span.clone(),
                });
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
                    None => self.error(CheckError::LoopKeywordMisplaced {
                        name: name.to_string(),
                        op: op_name.to_string(),
                        at: kw.span.clone(),
                    }),
                }
                continue;
            }
            // nki_names.rs: NKI's name for a parameter nkc spells otherwise, or one it ignores.
            let canonical = match params.iter().any(|p| p.0 == name) {
                true => Some(name),
                false => match super::nki_names::alias(op_name, name) {
                    Some(super::nki_names::Alias::Ignored) => continue,
                    Some(super::nki_names::Alias::Param(p)) => Some(p),
                    None => None,
                },
            };
            match canonical.and_then(|c| params.iter().position(|p| p.0 == c)) {
                Some(i) => {
                    if let Some(first) = &given_at[i] {
                        self.error(CheckError::DuplicateArgument {
                            name: name.to_string(),
                            first: first.clone(),
                            at: kw.name.span.clone(),
                        });
                        ok = false;
                    } else {
                        slots[i] = Some(&kw.value);
                        given_at[i] = Some(kw.span.clone());
                    }
                }
                None => {
                    self.error(CheckError::UnknownKeyword {
                        op: op_name.to_string(),
                        name: name.to_string(),
                        params: params.iter().map(|p| p.0).collect(),
                        at: kw.name.span.clone(),
                    });
                    ok = false;
                }
            }
        }
        for (i, &(pname, required)) in params.iter().enumerate() {
            if required && slots[i].is_none() && ok {
                self.error(CheckError::MissingArgument {
                    op: op_name.to_string(),
                    param: pname,
                    at: call_span.clone(),
                });
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
                self.error(CheckError::StmtKeywordNested {
                    name: name.to_string(),
                    at: kw.span.clone(),
                });
                return;
            }
            KwSite::NotInLoop => {
                self.error(CheckError::StmtKeywordNotInLoop {
                    name: name.to_string(),
                    at: kw.span.clone(),
                });
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
                ExprKind::Str(s) => self.error(CheckError::NumStagesString {
                    text: s.clone(),
                    at: kw.value.span.clone(),
                }),
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
            this.error(CheckError::AnnotationInt {
                name: name.to_string(),
                min,
                label,
                at: kw.value.span.clone(),
            });
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
                self.error(CheckError::AnnotationBool {
                    name: kw.name.name.clone(),
                    at: kw.value.span.clone(),
                });
                None
            }
        }
    }
}
