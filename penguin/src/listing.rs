//! Bounded lists in messages: every diagnostic, error and warning that lists things (missing
//! stages, tensors, kernels, races, ...) shows at most [`LIST_CAP`] of them and counts the rest,
//! so that no input can make nkc print a message whose size grows with a value of the kernel.
//!
//! Penguin is the hub every other crate of nkc depends on (except the simulator, whose lists are
//! fixed tables), so the one helper lives here: the front end, the pipeliner, the backend and the
//! driver all call [`capped_list`] or [`capped_list_of`].

use std::fmt::Display;

/// The most items a message lists; the rest are counted ("… and 9,999,990 more").
pub const LIST_CAP: usize = 8;

/// The first [`LIST_CAP`] items joined by `sep`, then " and N more" for the rest (on a line of its
/// own when `sep` holds a newline). Consumes the iterator to count the rest: for a list that is
/// computed lazily and may be huge, use [`capped_list_of`] with its length.
pub fn capped_list<T: Display>(items: impl IntoIterator<Item = T>, sep: &str) -> String {
    let mut it = items.into_iter();
    let shown: Vec<String> = it.by_ref().take(LIST_CAP).map(|x| x.to_string()).collect();
    let rest = it.count() as u64;
    finish(shown, rest, sep)
}

/// As [`capped_list`] for a list of `total` items of which `items` yields the first ones (at least
/// [`LIST_CAP`] of them, or all): the rest are never generated, only counted by `total`.
pub fn capped_list_of<T: Display>(
    items: impl IntoIterator<Item = T>,
    total: u64,
    sep: &str,
) -> String {
    let shown: Vec<String> = items
        .into_iter()
        .take(LIST_CAP)
        .map(|x| x.to_string())
        .collect();
    let rest = total.saturating_sub(shown.len() as u64);
    finish(shown, rest, sep)
}

fn finish(shown: Vec<String>, rest: u64, sep: &str) -> String {
    let mut s = shown.join(sep);
    if rest > 0 {
        let more = format!("and {} more", thousands(rest));
        if sep.contains('\n') {
            s += sep;
            s += &more;
        } else {
            s.push(' ');
            s += &more;
        }
    }
    s
}

/// `9990` as `9,990`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let groups: Vec<&str> = digits
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| std::str::from_utf8(g).expect("ASCII digits"))
        .collect();
    groups.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lists_are_shown_whole() {
        assert_eq!(capped_list(["a", "b", "c"], ", "), "a, b, c");
        assert_eq!(capped_list(Vec::<u32>::new(), ", "), "");
    }

    #[test]
    fn long_lists_show_the_first_and_count_the_rest() {
        assert_eq!(
            capped_list(1..=20, ", "),
            "1, 2, 3, 4, 5, 6, 7, 8 and 12 more"
        );
        assert_eq!(
            capped_list_of(1u64.., 9_999_999, ", "),
            "1, 2, 3, 4, 5, 6, 7, 8 and 9,999,991 more"
        );
        assert_eq!(
            capped_list((0..10).map(|k| format!("  r{k}")), "\n"),
            "  r0\n  r1\n  r2\n  r3\n  r4\n  r5\n  r6\n  r7\nand 2 more"
        );
    }

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(9_999_990), "9,999,990");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }
}
