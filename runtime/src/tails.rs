//! Where plain text stops in each token, for walks that take plain text
//! as it is, and where a run of a counted class's bytes stops
//! ([`RunTails`]), for walks along the count.
//!
//! Inside a JSON string every plain character — printable ASCII but quote
//! and backslash, every non-ASCII character — leads the walk's
//! configuration back to itself. What such a configuration does with a
//! token then depends only on the token's *tail*: its bytes from the first
//! character that is not plain (a quote, a backslash, a control byte, a
//! sequence that breaks UTF-8). Llama 3.1 has about 5,100 tokens with such
//! a character but only about 2,600 distinct tails, most of which die on
//! their first or second byte; a walk sorts the tails once per
//! configuration (over [`Tails::trie`]) and every token below a node from
//! its tail, instead of visiting the 7,000 trie nodes above those tokens
//! (see `matcher::classify`). A counted class (`[A-Za-z0-9 .-]{1,32}`)
//! leads the configuration one step along its count per byte instead of
//! back to itself, so there the tokens are sorted by the length of their
//! run as well as by their tail.

use std::sync::OnceLock;

use crate::TokenId;
use crate::trie::{TokenTrie, Utf8, byte_class, is_plain};

/// The tails of a vocabulary's tokens that are not all plain text, and
/// which tokens are not plain for [`TokenTrie::plain_within`] either.
#[derive(Clone, Debug)]
pub(crate) struct Tails {
    /// The distinct tails as a trie of their own: a tail's rank there
    /// names it.
    trie: TokenTrie,
    /// The ranks (in the vocabulary's trie) of the *listed* tokens,
    /// ascending: those with places, and those without that
    /// [`TokenTrie::plain_within`] leaves out (longer than it counts, or
    /// ending inside a character). A walk that takes plain tokens from
    /// there sorts these alone.
    ranks: Vec<u32>,
    /// Per listed token: where its places start in `places` (the next
    /// token's start ends them).
    starts: Vec<u32>,
    /// Per place: its offset in the token's bytes, and the rank of the tail
    /// from there.
    places: Vec<(u32, u32)>,
    /// Per listed token: the characters before its first place (all of
    /// them, a character cut short by the end included, if it has none).
    leads: Vec<u32>,
    /// The most characters before a listed token's first place, or in a
    /// listed token without one.
    longest_lead: usize,
    /// Per number of characters: whether some listed token's first place
    /// comes after that many.
    place_leads: Vec<bool>,
}

impl Tails {
    /// The tails of the tokens of `vocabulary` (a vocabulary's trie).
    pub(crate) fn new(vocabulary: &TokenTrie) -> Self {
        // The listed tokens' bytes, one after the other, and where each
        // starts (one more at the end).
        let mut bytes: Vec<u8> = Vec::new();
        let mut bytes_start: Vec<usize> = vec![0];
        let mut ranks = Vec::new();
        let mut starts = Vec::new();
        // Per place: its offset and the listed token it is in.
        let mut found: Vec<(u32, usize)> = Vec::new();
        let mut path: Vec<u8> = Vec::new();
        let mut offsets = Vec::new();
        let mut leads = Vec::new();
        let mut place_leads = Vec::new();
        for node in 0..vocabulary.len() {
            path.truncate(vocabulary.depth(node) - 1);
            path.push(vocabulary.byte(node));
            let (first, past) = vocabulary.own_ranks(node);
            if first == past {
                continue;
            }
            places(&path, &mut offsets);
            for rank in first..past {
                if offsets.is_empty() && vocabulary.plain_chars(rank) > 0 {
                    continue;
                }
                let token = ranks.len();
                ranks.push(rank);
                let lead = offsets.first().map_or(path.len(), |&at| at as usize);
                let chars = characters(&path[..lead]);
                leads.push(chars);
                if !offsets.is_empty() {
                    let chars = chars as usize;
                    if place_leads.len() <= chars {
                        place_leads.resize(chars + 1, false);
                    }
                    place_leads[chars] = true;
                }
                starts.push(u32::try_from(found.len()).expect("places fit in u32"));
                found.extend(offsets.iter().map(|&at| (at, token)));
                bytes.extend_from_slice(&path);
                bytes_start.push(bytes.len());
            }
        }
        starts.push(u32::try_from(found.len()).expect("places fit in u32"));
        let tail = |&(at, token): &(u32, usize)| {
            &bytes[bytes_start[token] + at as usize..bytes_start[token + 1]]
        };
        let mut distinct: Vec<&[u8]> = found.iter().map(tail).collect();
        distinct.sort_unstable();
        distinct.dedup();
        let places = found
            .iter()
            .map(|place| {
                let rank = distinct
                    .binary_search(&tail(place))
                    .expect("every tail is there");
                (place.0, u32::try_from(rank).expect("tails fit in u32"))
            })
            .collect();
        // Distinct and sorted: a tail's rank in its trie is its index here.
        let trie = TokenTrie::new(
            distinct.iter().enumerate().map(|(index, &tail)| {
                let id = TokenId::new(index).expect("tails fit in a token id");
                (id, tail)
            }),
            distinct.len().div_ceil(32),
        );
        let longest_lead = leads.iter().max().map_or(0, |&lead| lead as usize);
        Self {
            trie,
            ranks,
            starts,
            places,
            leads,
            longest_lead,
            place_leads,
        }
    }

    /// The distinct tails, as a trie whose ranks name them.
    pub(crate) fn trie(&self) -> &TokenTrie {
        &self.trie
    }

    /// How many tokens of ranks `start..end` are listed.
    pub(crate) fn count(&self, (start, end): (u32, u32)) -> usize {
        self.ranks.partition_point(|&rank| rank < end)
            - self.ranks.partition_point(|&rank| rank < start)
    }

    /// The listed tokens of ranks `start..end`, ascending, each with its
    /// first place at or past `offset` bytes (and the rank of the tail
    /// from there) if it has one: a token without is plain text from there
    /// on.
    pub(crate) fn from(
        &self,
        (start, end): (u32, u32),
        offset: usize,
    ) -> impl Iterator<Item = (u32, Option<(usize, u32)>)> + '_ {
        let first = self.ranks.partition_point(|&rank| rank < start);
        let past = self.ranks.partition_point(|&rank| rank < end);
        (first..past).map(move |token| {
            let places = &self.places[self.starts[token] as usize..self.starts[token + 1] as usize];
            let place = places
                .iter()
                .find(|&&(at, _)| at as usize >= offset)
                .map(|&(at, tail)| (at as usize, tail));
            (self.ranks[token], place)
        })
    }

    /// Every listed token, ascending, with the characters before its first
    /// place and the place (its offset and the rank of the tail from
    /// there), if it has one; a token without is plain text all through,
    /// its last character perhaps cut short.
    pub(crate) fn leads(&self) -> impl Iterator<Item = (u32, usize, Option<(usize, u32)>)> + '_ {
        (0..self.ranks.len()).map(move |token| {
            let first = self.starts[token] as usize;
            let place = (first < self.starts[token + 1] as usize).then(|| {
                let (at, tail) = self.places[first];
                (at as usize, tail)
            });
            (self.ranks[token], self.leads[token] as usize, place)
        })
    }

    /// The most characters [`Tails::leads`] gives a token.
    pub(crate) fn longest_lead(&self) -> usize {
        self.longest_lead
    }

    /// Whether some listed token's first place comes after `chars`
    /// characters.
    pub(crate) fn place_after(&self, chars: usize) -> bool {
        self.place_leads.get(chars).copied().unwrap_or(false)
    }
}

/// The tokens that begin with a run of bytes of some ASCII byte classes
/// — a counted character class, `[A-Za-z0-9 .-]{1,32}` — and go on past
/// it, by the byte that stops the run (the *stop*) and the run's length
/// (the *lead*). Where each byte of the classes leads one step along a
/// count, what the count does with such a token depends only on the
/// configuration its lead leads to and on its tail, the bytes from the
/// stop on. Most stops are refused there at once (Llama 3.1 has 12,000
/// tokens of a space and a word with accented letters, for classes with
/// the space), so the tails after a stop are made into a trie only once
/// some configuration takes the stop. Tokens that begin with another byte
/// are not listed (a walk meets them at its first byte), nor those of
/// class bytes alone.
#[derive(Debug)]
pub(crate) struct RunTails {
    /// The listed tokens' ranks in the vocabulary's trie, by stop, then
    /// lead, then rank.
    ranks: Vec<u32>,
    /// Per listed token: where its tail's bytes are in `bytes`.
    tails: Vec<(u32, u32)>,
    bytes: Vec<u8>,
    /// The listed tokens of each stop and lead, in their order.
    runs: Vec<Run>,
    /// The stops, ascending.
    stops: Vec<Stop>,
    /// Per lead: whether some listed token has it.
    leads: Vec<bool>,
}

/// The listed tokens of [`RunTails`] with one stop and one lead.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    /// The stop's index in [`RunTails::stops`].
    pub stop: usize,
    /// The class bytes before the stop.
    pub lead: usize,
    /// The range of listed tokens.
    tokens: (u32, u32),
}

/// One stop of [`RunTails`].
#[derive(Debug)]
struct Stop {
    byte: u8,
    /// The range of listed tokens with this stop.
    tokens: (u32, u32),
    tails: OnceLock<StopTails>,
}

/// The distinct tails after one stop, as a trie whose ranks name them.
#[derive(Debug)]
pub(crate) struct StopTails {
    trie: TokenTrie,
    /// Per listed token of the stop, in order: the rank of its tail.
    of_token: Vec<u32>,
}

impl StopTails {
    /// The distinct tails, as a trie whose ranks name them; every tail
    /// begins with the stop.
    pub(crate) fn trie(&self) -> &TokenTrie {
        &self.trie
    }
}

impl RunTails {
    /// The runs of bytes of the ASCII byte classes `classes` (bits of
    /// [`byte_class`]) in the tokens of `vocabulary` (a vocabulary's trie).
    pub(crate) fn new(vocabulary: &TokenTrie, classes: u64) -> Self {
        let in_classes = |byte: u8| byte.is_ascii() && classes & 1 << byte_class(byte) != 0;
        // Per listed token: its stop, lead, rank and where its tail is.
        let mut found: Vec<(u8, u32, u32, (u32, u32))> = Vec::new();
        let mut bytes: Vec<u8> = Vec::new();
        let mut path: Vec<u8> = Vec::new();
        // Per depth of the path: how many class bytes it begins with.
        let mut leads: Vec<usize> = vec![0];
        let mut node = 0;
        while node < vocabulary.len() {
            let (depth, byte) = (vocabulary.depth(node), vocabulary.byte(node));
            let lead = match leads[depth - 1] {
                above if above == depth - 1 && in_classes(byte) => depth,
                above => above,
            };
            if lead == 0 || (lead == depth && vocabulary.of_classes(node, classes)) {
                node = vocabulary.end(node);
                continue;
            }
            path.truncate(depth - 1);
            path.push(byte);
            leads.truncate(depth);
            leads.push(lead);
            let (first, past) = vocabulary.own_ranks(node);
            if lead < depth && first < past {
                let at = |len: usize| u32::try_from(len).expect("tails fit in u32");
                let start = at(bytes.len());
                bytes.extend_from_slice(&path[lead..]);
                let tail = (start, at(bytes.len()));
                for rank in first..past {
                    found.push((path[lead], offset(lead), rank, tail));
                }
            }
            node += 1;
        }
        found.sort_unstable_by_key(|&(stop, lead, rank, _)| (stop, lead, rank));
        let mut runs: Vec<Run> = Vec::new();
        let mut stops: Vec<Stop> = Vec::new();
        let mut leads = Vec::new();
        for (index, &(byte, lead, _, _)) in found.iter().enumerate() {
            let index = u32::try_from(index).expect("tokens fit in u32");
            if stops.last().is_none_or(|stop| stop.byte != byte) {
                stops.push(Stop {
                    byte,
                    tokens: (index, index),
                    tails: OnceLock::new(),
                });
            }
            let stop = stops.len() - 1;
            stops[stop].tokens.1 = index + 1;
            let lead = lead as usize;
            match runs.last_mut() {
                Some(run) if run.stop == stop && run.lead == lead => run.tokens.1 = index + 1,
                _ => runs.push(Run {
                    stop,
                    lead,
                    tokens: (index, index + 1),
                }),
            }
            if leads.len() <= lead {
                leads.resize(lead + 1, false);
            }
            leads[lead] = true;
        }
        Self {
            ranks: found.iter().map(|&(_, _, rank, _)| rank).collect(),
            tails: found.iter().map(|&(_, _, _, tail)| tail).collect(),
            bytes,
            runs,
            stops,
            leads,
        }
    }

    /// The listed tokens by stop and lead, stop after stop.
    pub(crate) fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// The stops, ascending: each byte that stops a run.
    pub(crate) fn stops(&self) -> impl ExactSizeIterator<Item = u8> + '_ {
        self.stops.iter().map(|stop| stop.byte)
    }

    /// Whether some listed token has a lead of `lead` class bytes.
    pub(crate) fn has_lead(&self, lead: usize) -> bool {
        self.leads.get(lead).copied().unwrap_or(false)
    }

    /// The tails after the stop of index `stop`, made on first use.
    pub(crate) fn stop_tails(&self, stop: usize) -> &StopTails {
        let stop = &self.stops[stop];
        stop.tails.get_or_init(|| {
            let (first, past) = (stop.tokens.0 as usize, stop.tokens.1 as usize);
            let tail = |token: usize| {
                let (start, end) = self.tails[token];
                &self.bytes[start as usize..end as usize]
            };
            let mut order: Vec<usize> = (first..past).collect();
            order.sort_unstable_by(|&a, &b| tail(a).cmp(tail(b)));
            let mut distinct: Vec<&[u8]> = Vec::new();
            let mut of_token = vec![0; past - first];
            for token in order {
                if distinct.last() != Some(&tail(token)) {
                    distinct.push(tail(token));
                }
                of_token[token - first] =
                    u32::try_from(distinct.len() - 1).expect("tails fit in u32");
            }
            // Distinct and sorted: a tail's rank in its trie is its index
            // here.
            let trie = TokenTrie::new(
                distinct.iter().enumerate().map(|(index, &tail)| {
                    let id = TokenId::new(index).expect("tails fit in a token id");
                    (id, tail)
                }),
                distinct.len().div_ceil(32),
            );
            StopTails { trie, of_token }
        })
    }

    /// The tokens of `run` (ranks in the vocabulary's trie) with the ranks
    /// of their tails in `tails`, the tails after the run's stop.
    pub(crate) fn tokens<'a>(
        &'a self,
        run: &Run,
        tails: &'a StopTails,
    ) -> impl Iterator<Item = (u32, u32)> + 'a {
        let (first, past) = (run.tokens.0 as usize, run.tokens.1 as usize);
        let stop_first = self.stops[run.stop].tokens.0 as usize;
        (self.ranks[first..past].iter().copied()).zip(
            tails.of_token[first - stop_first..past - stop_first]
                .iter()
                .copied(),
        )
    }
}

/// The characters `bytes` begin (UTF-8 lead bytes and ASCII).
fn characters(bytes: &[u8]) -> u32 {
    let count = bytes.iter().filter(|&&byte| byte & 0xC0 != 0x80).count();
    u32::try_from(count).expect("tokens are short")
}

/// Puts into `places` the offsets in `bytes` where a character that is
/// not plain text starts (a byte [`is_plain`] refuses, or a sequence that
/// breaks UTF-8), up to the first break: past it nothing is whole characters. A character cut
/// short by the end of the bytes counts as plain: a configuration that
/// every non-ASCII character leads back to takes each of its beginnings
/// byte by byte (`StepMemo::target` checks them all).
fn places(bytes: &[u8], places: &mut Vec<u32>) {
    places.clear();
    let mut at = 0;
    while at < bytes.len() {
        let byte = bytes[at];
        if byte.is_ascii() {
            if !is_plain(byte) {
                places.push(offset(at));
            }
            at += 1;
            continue;
        }
        let mut state = Utf8::Boundary;
        let mut next = at;
        loop {
            match state.advance(bytes[next]) {
                None => {
                    places.push(offset(at));
                    return;
                }
                Some(Utf8::Boundary) => break,
                Some(inside) => state = inside,
            }
            next += 1;
            if next == bytes.len() {
                return;
            }
        }
        at = next + 1;
    }
}

/// An offset in a token.
fn offset(at: usize) -> u32 {
    u32::try_from(at).expect("tokens are short")
}

#[cfg(test)]
mod tests {
    use super::{RunTails, Tails, places};

    fn places_of(bytes: &[u8]) -> Vec<u32> {
        let mut found = Vec::new();
        places(bytes, &mut found);
        found
    }
    use crate::TokenId;
    use crate::trie::TokenTrie;

    /// The tails of a vocabulary of `tokens` (ids in order).
    fn tails_of(tokens: &[&[u8]]) -> Tails {
        let trie = TokenTrie::new(
            tokens
                .iter()
                .enumerate()
                .map(|(index, &bytes)| (TokenId::new(index).unwrap(), bytes)),
            1,
        );
        Tails::new(&trie)
    }

    #[test]
    fn places_are_where_plain_text_stops_up_to_the_first_break() {
        assert_eq!(places_of(b"abc"), Vec::<u32>::new());
        assert_eq!(places_of(b"a\"b\\"), vec![1, 3]);
        assert_eq!(places_of(b"\t\n"), vec![0, 1]);
        assert_eq!(places_of("é\"".as_bytes()), vec![2]);
        // Cut short by the end: plain.
        assert_eq!(places_of(&"é".as_bytes()[..1]), Vec::<u32>::new());
        assert_eq!(places_of(b"x\xe7\x9a"), Vec::<u32>::new());
        // Broken: a place, and none after it.
        assert_eq!(places_of(b"a\xe7b\"c"), vec![1]);
        assert_eq!(places_of(b"\x80\""), vec![0]);
        assert_eq!(places_of(b"\x7f"), vec![0]);
    }

    #[test]
    fn leads_count_the_characters_before_the_first_place_or_in_the_whole_token() {
        // `x` and a character cut short: listed (not counted as plain),
        // no place, two characters.
        let tokens: Vec<&[u8]> = vec![b"ab", "é\"".as_bytes(), b"\\n", b"x\xe7\x9a"];
        let tails = tails_of(&tokens);
        let leads: Vec<_> = tails
            .leads()
            .map(|(_, lead, place)| (lead, place.map(|(at, _)| at)))
            .collect();
        // By rank: `\n`, `x…`, `é"`.
        assert_eq!(leads, vec![(0, Some(0)), (2, None), (1, Some(2))]);
        assert_eq!(tails.longest_lead(), 2);
        assert!(tails.place_after(0) && tails.place_after(1));
        assert!(!tails.place_after(2) && !tails.place_after(3));
    }

    #[test]
    fn tails_name_each_distinct_rest_once_and_find_places_from_an_offset() {
        let tokens: Vec<&[u8]> = vec![b"a\"", b"ab", b"b\"", b"x\"y\"", b"\\n"];
        let tails = tails_of(&tokens);
        // `"` (twice), `\n`, `"y"` (and its `"` again).
        assert_eq!(tails.trie().universe_len(), 3);
        let all = (0, 5);
        assert_eq!(tails.count(all), 4);
        let from_one: Vec<_> = tails
            .from(all, 1)
            .map(|(_, place)| place.map(|p| p.0))
            .collect();
        // By rank: `\n`, `a"`, `b"`, `x"y"` (`ab` has no tail).
        assert_eq!(from_one, vec![None, Some(1), Some(1), Some(1)]);
        let from_two: Vec<_> = tails.from(all, 2).map(|(_, place)| place).collect();
        let quote = from_two[3].unwrap();
        assert_eq!(quote.0, 3);
        assert_eq!(
            Some(quote.1),
            tails.from(all, 1).nth(1).unwrap().1.map(|p| p.1)
        );
    }

    #[test]
    fn runs_are_listed_by_stop_and_lead_with_each_distinct_tail_once() {
        let tokens: Vec<&[u8]> = vec![
            b"ab\"",
            b"a\"",
            b"abc",
            b"\"a",
            b"ab\"}",
            "a\u{e9}".as_bytes(),
        ];
        let trie = TokenTrie::new(
            (tokens.iter().enumerate()).map(|(id, &bytes)| (TokenId::new(id).unwrap(), bytes)),
            1,
        );
        let lower = 1 << crate::trie::byte_class(b'a');
        let runs = RunTails::new(&trie, lower);
        // `abc` is all class bytes and `"a` begins with another: not listed.
        assert_eq!(runs.stops().collect::<Vec<_>>(), vec![b'"', 0xC3]);
        let listed: Vec<(u8, usize, usize)> = (runs.runs().iter())
            .map(|run| {
                let stop = runs.stops().nth(run.stop).unwrap();
                let tokens = runs.tokens(run, runs.stop_tails(run.stop)).count();
                (stop, run.lead, tokens)
            })
            .collect();
        assert_eq!(listed, vec![(b'"', 1, 1), (b'"', 2, 2), (0xC3, 1, 1)]);
        assert!(runs.has_lead(1) && runs.has_lead(2));
        assert!(!runs.has_lead(0) && !runs.has_lead(3));
        // After `"`: the tails `"` (of `a"` and `ab"`) and `"}`.
        let quote = runs.stop_tails(0);
        assert_eq!(quote.trie().universe_len(), 2);
        let tails: Vec<u32> = (runs.runs()[..2].iter())
            .flat_map(|run| runs.tokens(run, quote).map(|(_, tail)| tail))
            .collect();
        assert_eq!(tails, vec![0, 0, 1]);
    }
}
