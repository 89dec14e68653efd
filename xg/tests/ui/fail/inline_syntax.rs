//! A syntax error, and an unknown import, inline.
fn main() {
    let _ = xg::grammar! {
        import "std/jsn.xg" as json;
        root ::= "a" | | "b"
    };
}
