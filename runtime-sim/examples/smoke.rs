fn main() {
    let path = std::env::args().nth(1).unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    let p = runtime_sim::text::parse(&text).unwrap();
    print!("{}", runtime_sim::text::print(&p));
    let inputs = runtime_sim::sim::random_inputs(&p, 1);
    let r = runtime_sim::sim::simulate(&p, &inputs, &Default::default());
    match r {
        Ok(r) => {
            println!("{:?}", r.stats);
            for x in &r.races {
                println!("{x}");
            }
        }
        Err(e) => println!("ERR {e}"),
    }
}
