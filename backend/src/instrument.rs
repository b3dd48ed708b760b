//! What every pass of the pipeline ends in, on Penguin IR and in the backend alike: the pass is
//! timed (`--time-passes`) and, when asked (`--print-after PASS`, `--print-after-all`), the IR it
//! left is printed. The driver's compile context (`nkc::pipeline::Context`) owns one
//! [`Instrument`] and hands it down to the backend's [`crate::context::Context`], so the two
//! halves of the pipeline write one list of pass times and one list of printed blocks.
//!
//! Invariant: a pass that ran is recorded exactly once, in the order the passes ran (a pass the
//! backend repeats, such as `schedule`, once per run); a pass that did not apply is not recorded.

/// After which passes the IR is printed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum PrintAfter {
    #[default]
    Nothing,
    /// `--print-after-all`.
    All,
    /// `--print-after PASS` (repeatable).
    Passes(Vec<String>),
}

impl PrintAfter {
    pub fn wants(&self, pass: &str) -> bool {
        match self {
            PrintAfter::Nothing => false,
            PrintAfter::All => true,
            PrintAfter::Passes(p) => p.iter().any(|x| x == pass),
        }
    }
}

/// The form of a printed block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Penguin IR text (`penguin::write_function`; reads back with `penguin::parse_function`).
    Penguin,
    /// BIR text (`crate::codegen::bir::write_bir`; reads back with `crate::codegen::bir_parse::parse_bir`).
    Bir,
    /// The pseudo-ISA program (`runtime_sim::text::print`; reads back with
    /// `runtime_sim::text::parse`).
    Isa,
    /// A one-line summary (`#` comment) of a pass whose product has no text form.
    Summary,
}

impl Form {
    pub fn name(self) -> &'static str {
        match self {
            Form::Penguin => "penguin",
            Form::Bir => "bir",
            Form::Isa => "isa",
            Form::Summary => "summary",
        }
    }

    pub fn from_name(s: &str) -> Option<Form> {
        [Form::Penguin, Form::Bir, Form::Isa, Form::Summary]
            .into_iter()
            .find(|f| f.name() == s)
    }
}

/// The IR after one pass, as printed.
#[derive(Clone, Debug)]
pub struct Printed {
    pub pass: String,
    pub form: Form,
    pub text: String,
}

impl Printed {
    /// The header line that precedes the block.
    pub fn header(&self) -> String {
        format!("# *** IR after {} ({}) ***", self.pass, self.form.name())
    }

    /// The header, then the text.
    pub fn render(&self) -> String {
        format!("{}\n{}", self.header(), self.text)
    }
}

/// Splits printed output (headers and blocks, as [`Printed::render`] writes them) back into
/// blocks; text before the first header is dropped.
pub fn split_printed(text: &str) -> Vec<Printed> {
    let mut out: Vec<Printed> = Vec::new();
    for line in text.split_inclusive('\n') {
        let header = line
            .trim_end()
            .strip_prefix("# *** IR after ")
            .and_then(|r| r.strip_suffix(") ***"))
            .and_then(|r| r.split_once(" ("))
            .and_then(|(pass, form)| Some((pass, Form::from_name(form)?)));
        match (header, out.last_mut()) {
            (Some((pass, form)), _) => out.push(Printed {
                pass: pass.to_string(),
                form,
                text: String::new(),
            }),
            (None, Some(last)) => last.text.push_str(line),
            (None, None) => {}
        }
    }
    out
}

/// A pass and the wall-clock time it took.
#[derive(Clone, Debug)]
pub struct PassTime {
    pub pass: String,
    pub time: std::time::Duration,
}

/// The `--time-passes` report: one line per pass run, in order (a pass the backend repeats,
/// such as `schedule`, once per run), then the total.
pub fn format_pass_times(times: &[PassTime]) -> String {
    let total: std::time::Duration = times.iter().map(|t| t.time).sum();
    let mut out = String::from("# pass times (ms)\n");
    for t in times {
        out.push_str(&format!(
            "{:>9.3}  {}\n",
            1e3 * t.time.as_secs_f64(),
            t.pass
        ));
    }
    out.push_str(&format!("{:>9.3}  total\n", 1e3 * total.as_secs_f64()));
    out
}

/// The pass times and printed blocks of one compilation.
#[derive(Debug)]
pub struct Instrument {
    pub print_after: PrintAfter,
    /// Write each printed block to standard error as soon as its pass completes (the CLI);
    /// otherwise they are only kept in [`Instrument::printed`].
    pub print_to_stderr: bool,
    /// The blocks printed so far.
    pub printed: Vec<Printed>,
    /// The passes run so far, each with the time since the previous one completed (its
    /// verifier included).
    pub times: Vec<PassTime>,
    mark: std::time::Instant,
}

impl Default for Instrument {
    fn default() -> Self {
        Instrument::new(PrintAfter::Nothing, false)
    }
}

impl Instrument {
    pub fn new(print_after: PrintAfter, print_to_stderr: bool) -> Self {
        Instrument {
            print_after,
            print_to_stderr,
            printed: Vec::new(),
            times: Vec::new(),
            mark: std::time::Instant::now(),
        }
    }

    /// Records that `pass` completed: its time since the previous pass completed, and (when it
    /// is asked for) the IR it left, `text` in `form`.
    pub fn record(&mut self, pass: &str, form: Form, text: impl FnOnce() -> String) {
        let now = std::time::Instant::now();
        self.times.push(PassTime {
            pass: pass.to_string(),
            time: now - self.mark,
        });
        self.mark = now;
        if !self.print_after.wants(pass) {
            return;
        }
        let p = Printed {
            pass: pass.to_string(),
            form,
            text: text(),
        };
        if self.print_to_stderr {
            eprint!("{}", p.render());
        }
        self.printed.push(p);
    }
}
