//! `grammar!` as users meet it (trybuild): programs that compile and run,
//! and programs whose grammar errors must fail to compile with the
//! messages in the `.stderr` files next to them.

#[test]
fn grammar_macro() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
