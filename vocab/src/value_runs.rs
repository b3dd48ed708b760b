//! The run-length form of a constant's values that every text form writes (Penguin IR, BIR and
//! the pseudo-ISA): ` = [RUN, ...]`, row-major, each run of equal values (equal bits) as
//! `VALUE*COUNT`, `VALUE` alone for a run of one.
//!
//! Invariant: the runs cover the values in order, each run is as long as it can be (two
//! adjacent runs never hold the same bits), so the text of a constant is one function of its
//! bits; how one value is spelled is the caller's (each text form has its own float syntax).

use std::fmt::{self, Write};

/// Writes ` = [RUN, ...]` for `values` to `out`, each run's value spelled by `write_value`.
pub fn write_value_runs(
    out: &mut dyn Write,
    values: &[f32],
    write_value: impl Fn(&mut dyn Write, f32) -> fmt::Result,
) -> fmt::Result {
    out.write_str(" = [")?;
    let mut i = 0;
    while i < values.len() {
        let v = values[i];
        let n = values[i..]
            .iter()
            .take_while(|x| x.to_bits() == v.to_bits())
            .count();
        if i > 0 {
            out.write_str(", ")?;
        }
        write_value(out, v)?;
        if n > 1 {
            write!(out, "*{n}")?;
        }
        i += n;
    }
    out.write_str("]")
}

#[cfg(test)]
mod tests {
    use super::write_value_runs;

    fn runs(values: &[f32]) -> String {
        let mut s = String::new();
        write_value_runs(&mut s, values, |o, v| write!(o, "{v:?}")).expect("a String takes it");
        s
    }

    #[test]
    fn equal_bits_make_one_run() {
        assert_eq!(runs(&[]), " = []");
        assert_eq!(runs(&[1.0]), " = [1.0]");
        assert_eq!(runs(&[1.0, 1.0, 2.0, 1.0]), " = [1.0*2, 2.0, 1.0]");
        // 0.0 and -0.0 compare equal but differ in bits: two runs.
        assert_eq!(runs(&[0.0, -0.0, -0.0]), " = [0.0, -0.0*2]");
    }
}
