//! Filetests of the loop dependence graph and the modulo scheduler, Penguin IR in: each
//! `tests/schedules/*.pir` file is Penguin IR (after the annotated pipeliner) followed by the
//! schedule it must get, as `#` comment lines after the marker `# schedule:`. The test lowers the
//! IR to BIR, runs the list scheduler, the queue plan, the dependence graph and the modulo
//! scheduler ([`backend::modulo::schedule_loops`]) and compares, per scheduled loop: ResMII and
//! its resource, RecMII and its cycle, the II, the predicted period, whether the body was
//! reordered, every dependence edge (kind, distance, latency) and the emitted body order
//! (`common::render_schedules`). `tests/bir_schedules.rs` runs the same passes on BIR text.
//! `NKC_BLESS=1 cargo test -p backend --test schedules` rewrites the expectations (review the
//! diff).

mod common;

use backend::bir::lower_function;
use std::path::Path;

fn render(ir: &str) -> String {
    let func = penguin::parse_function(ir).expect("the filetest's IR parses");
    penguin::verify_function(&func).expect("the filetest IR verifies");
    let bir = lower_function(&func).expect("the filetest's IR lowers to BIR");
    common::render_schedules(&func, bir)
}

#[test]
fn schedules_match_their_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schedules");
    let n = common::run_schedule_filetests(&dir, "pir", render);
    assert!(n >= 20, "at least 20 schedule filetests");
}
