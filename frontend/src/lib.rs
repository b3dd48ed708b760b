//! The nkc front end: the kernel language of `LANGUAGE.md`, from source text to Penguin IR.

pub mod ast;
pub mod check;
pub mod codes;
pub mod diagnostic;
pub mod lower;
