//! `grammar!` with a real vocabulary: a tool call whose arguments follow a
//! JSON Schema, compiled at build time, constrains a stand-in "model" that
//! picks a random allowed token at each step.
//!
//! ```sh
//! cargo run --release -p xg --example grammar_macro [SEED] [TOKENIZER.json]
//! ```
//!
//! Without a tokenizer it uses the Qwen3 vocabulary vendored in `data/`.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Instant;

use xg::{Matcher, StaticGrammar, TokenId, Vocabulary};

static CALL: StaticGrammar = xg::grammar! {
    root ::= "{\"name\": \"get_weather\", \"arguments\": " arguments "}"
    arguments ::= %json {
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 1, "maxLength": 12},
            "unit": {"enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7}
        },
        "required": ["city", "unit"],
        "additionalProperties": false
    }
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let seed: u64 = args.next().map_or(Ok(7), |s| s.parse())?;
    let vocabulary = Arc::new(match args.next() {
        Some(path) => Vocabulary::from_tokenizer_json(&std::fs::read(path)?, None)?,
        None => qwen3()?,
    });

    let mut matcher = Matcher::with_vocabulary(CALL.grammar(), Arc::clone(&vocabulary));
    let mut mask = vec![0u32; vocabulary.mask_words()];
    let mut random = seed | 1;
    let mut times = Vec::new();
    let mut stdout = std::io::stdout().lock();
    loop {
        let started = Instant::now();
        matcher.fill_next_token_bitmask(&mut mask)?;
        times.push(started.elapsed().as_secs_f64() * 1e6);
        let allowed: Vec<TokenId> = (0..vocabulary.len())
            .map(|i| TokenId::new(i).expect("in range"))
            .filter(|id| mask[id.as_usize() / 32] >> (id.as_usize() % 32) & 1 == 1)
            .collect();
        // Seeded random logits stand in for a model: any allowed token,
        // but — like a model — rarely a run of layout whitespace.
        let words: Vec<TokenId> = allowed
            .iter()
            .copied()
            .filter(|&id| !vocabulary.bytes(id).iter().all(u8::is_ascii_whitespace))
            .collect();
        let pool = if words.is_empty() { &allowed } else { &words };
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        let token = pool[usize::try_from(random % pool.len() as u64)?];
        if vocabulary.is_stop(token) {
            break;
        }
        matcher.accept_token(token)?;
        stdout.write_all(vocabulary.bytes(token))?;
        stdout.flush()?;
    }
    let rest = &times[1..];
    println!(
        "\n\n{} masks: the first {:.1} ms (it builds the vocabulary's token trie), \
         then {:.1} µs on average",
        times.len(),
        times[0] / 1e3,
        rest.iter().sum::<f64>() / f64::from(u32::try_from(rest.len().max(1))?)
    );
    Ok(())
}

/// The Qwen3 vocabulary vendored in the repository.
fn qwen3() -> Result<Vocabulary, Box<dyn std::error::Error>> {
    let gzipped = include_bytes!("../../data/tokenizers/qwen3/tokenizer.json.gz");
    let config = include_bytes!("../../data/tokenizers/qwen3/tokenizer_config.json");
    let mut json = Vec::new();
    flate2::read::GzDecoder::new(&gzipped[..]).read_to_end(&mut json)?;
    Ok(Vocabulary::from_tokenizer_json(&json, Some(config))?)
}
