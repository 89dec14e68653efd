//! Fuzz target: the bundle loader on untrusted bytes. Input that starts
//! with the bundle magic is opened as it is; any other input is a list of
//! edits (offset, xor mask) and a length applied to a sound bundle with
//! precomputed masks, so mutations reach deep into the format. Opening must
//! not panic; a bundle that opens must give masks equal to those of the
//! sound grammar compiled in memory (damaged mask entries are rebuilt).
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use xg_compiler::{Request, pipeline};
use xg_runtime::bundle::{self, Masks, Precompute, format::MAGIC};
use xg_runtime::{Grammar, Matcher, TokenId, Vocabulary};

const GRAMMAR: &str = r#"root ::= "<" name ">" [^<]{0,20} "</" name ">" | dispatch(stop="END") { "<a>" => [0-9]+ "</a>" }
name ::= [a-z]+ ("-" name)?"#;

fn vocabulary() -> Vocabulary {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    for piece in ["<a>", "</", "ab", "abc", "12", "END", "a-b", "x</"] {
        tokens.push(piece.as_bytes().to_vec());
    }
    let stop = TokenId::new(tokens.len()).unwrap();
    tokens.push(b"<eos>".to_vec());
    Vocabulary::from_byte_strings(&tokens, &[stop])
        .unwrap()
        .with_stop_tokens(&[stop])
        .unwrap()
}

/// The sound grammar and its bundle.
fn sound() -> &'static (Arc<Grammar>, Vec<u8>) {
    static SOUND: OnceLock<(Arc<Grammar>, Vec<u8>)> = OnceLock::new();
    SOUND.get_or_init(|| {
        let mut request = Request::ahead_of_time();
        let file = request.add("fuzz.xg", GRAMMAR);
        let grammar = Arc::new(pipeline::grammar(&mut request, file, "root").unwrap());
        let masks = Masks::precompute(&grammar, &vocabulary(), Precompute::All);
        let bytes =
            bundle::write(&grammar, Some(&masks)).expect("the compiler's grammars are complete");
        (grammar, bytes)
    })
}

fuzz_target!(|data: &[u8]| {
    let (grammar, sound_bytes) = sound();
    let edited = !data.starts_with(&MAGIC);
    let bytes = if edited {
        let mut bytes = sound_bytes.clone();
        let mut edits = data.chunks_exact(3);
        for edit in &mut edits {
            let at = usize::from(u16::from_le_bytes([edit[0], edit[1]])) % bytes.len();
            bytes[at] ^= edit[2];
        }
        if let [a, b] = edits.remainder() {
            bytes.truncate(usize::from(u16::from_le_bytes([*a, *b])));
        }
        bytes
    } else {
        data.to_vec()
    };
    let _ = bundle::inspect(&bytes);
    let fresh = Arc::new(vocabulary());
    let Ok(opened) = Grammar::from_bundle(bytes, Some(&fresh)) else {
        return;
    };
    // Only the sound tables can survive edits (every other byte is checked).
    if !edited || opened.tables() != grammar.tables() {
        let mut matcher = Matcher::with_vocabulary(Arc::new(opened), fresh);
        let mut mask = vec![0; matcher.vocabulary().unwrap().mask_words()];
        let _ = matcher.fill_next_token_bitmask(&mut mask);
        return;
    }
    let reference = Arc::new(vocabulary());
    let mut ours = Matcher::with_vocabulary(Arc::new(opened), Arc::clone(&fresh));
    let mut theirs = Matcher::with_vocabulary(Arc::clone(grammar), reference);
    let words = fresh.mask_words();
    let (mut a, mut b) = (vec![0; words], vec![0; words]);
    for text in ["<", "ab", "-c>", "hello ", "</ab-c>"] {
        ours.fill_next_token_bitmask(&mut a).unwrap();
        theirs.fill_next_token_bitmask(&mut b).unwrap();
        assert_eq!(a, b, "masks differ before {text:?}");
        ours.accept_str(text).unwrap();
        theirs.accept_str(text).unwrap();
    }
});
