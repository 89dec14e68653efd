//! Generates the `.xg` parser from `src/syntax/grammar.lalrpop`.

fn main() {
    lalrpop::Configuration::new()
        .use_cargo_dir_conventions()
        .emit_rerun_directives(true)
        .process()
        .expect("the .xg grammar must generate a parser");
}
