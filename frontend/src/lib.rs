//! The nkc front end: the kernel language of `LANGUAGE.md`, from source text to Penguin IR.

pub mod ast;
pub mod codes;
pub mod diagnostic;
pub mod lexer;
pub mod parser;

/// Parses a whole file. Always returns a module (with `Error` nodes where recovery happened) and
/// every syntax error found, in source order.
pub fn parse(source: &str) -> (ast::Module, Vec<diagnostic::Error>) {
    parser::parse(source)
}
