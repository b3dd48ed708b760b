//! BIR's text form: the reader's syntax errors (line, column, message). The round-trip and
//! verifier-rejection files are filetests (`filetests/bir/*.bir`, run by the workspace's
//! `tests/filetests.rs`); `bir_parse_fuzz.rs` checks that no text makes the reader panic.

use backend::codegen::bir_parse::parse_bir;

#[test]
fn syntax_errors_name_line_and_column() {
    let head = "bir k(x) -> () {\n  buffer x: hbm f32[128, 64] input\n  buffer t: sbuf f32[128, 64] local\n";
    let cases: &[(&str, &str)] = &[
        ("  dve.frobnicate t[0 +: 128, 0 +: 64]\n}\n", "4:3: unknown operation `frobnicate`"),
        ("  gpu.copy t[0 +: 128, 0 +: 64], t[0 +: 128, 0 +: 64]\n}\n", "4:3: unknown engine `gpu`"),
        ("  sp.load t[0 +: 128, 0 +: 64], z[0 +: 128, 0 +: 64]\n}\n", "4:33: undefined buffer `z`"),
        ("  dve.memset t[0 +: 128, 0 +: 64]\n}\n", "4:14: expected `(` and the parameters of `memset` (missing `value`)"),
        ("  pe.matmul(accumulate=maybe) t[0 +: 128]\n}\n", "4:24: expected `true` or `false`, found `maybe`"),
        ("  loop q0 = 0..4 (i = q0 + 0) {\n  }\n}\n", "4:8: expected a loop register"),
        ("  loop r0 = 1..4 (i = r0 + 0) {\n  }\n}\n", "4:13: a loop register counts from `0`"),
        ("  loop r0 = 0..4 (i = r1 + 0) {\n  }\n}\n", "4:23: expected the loop's register `r0`, found `r1`"),
        ("  @(k < 2) dve.copy t[0 +: 128, 0 +: 64], t[0 +: 128, 0 +: 64]\n}\n", "4:5: undefined induction variable `k`"),
        ("  dve.copy t[0 +: 128, 0 +: 64], t[0 +: 128, 0 +: 64]\n", "5:1: expected `}` to close the kernel body opened at line 1:16"),
        ("  dve.copy t[0 +: 128, 0 +: 64], t[99999999999999999999 +: 128, 0 +: 64]\n}\n", "affine expression has a coefficient out of the 64-bit range"),
        ("  dve.memset(value=0.0) t[0 +: 128, 0 +: 64]\n  buffer u: sbuf f32[1] local\n}\n", "5:3: expected a loop, an instruction or `}` (buffers are declared before the first instruction)"),
        ("  loop r0 = 0..4 (i = r0 + 0) {\n  }\n  loop r0 = 0..4 (i = r0 + 0) {\n  }\n}\n", "6:19: duplicate induction variable `i` (first declared at line 4:19)"),
        ("}\nextra\n", "5:1: expected end of input after the kernel"),
        ("  dve.copy t[0 +: 128, 0 +: 64] $\n}\n", "4:33: unexpected character `$`"),
    ];
    for (body, want) in cases {
        let text = format!("{head}{body}");
        match parse_bir(&text) {
            Ok(_) => panic!("reads, expected `{want}`:\n{text}"),
            Err(e) => {
                let got = e.to_string();
                assert!(
                    got.contains(want),
                    "got `{got}`, expected `{want}`:\n{text}"
                );
            }
        }
    }
}
