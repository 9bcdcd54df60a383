//! Score and mask modifiers (flashgen::mods): the language's checks and canonical text, the interpreter,
//! gradients against finite differences, block classification and key bounds against brute force, and the
//! rendered IR through LLVM's parser, verifier and NVPTX backend.

use flashgen::mods::builtins;
use flashgen::mods::*;
use std::time::Instant;

/// xorshift-multiply generator (the tests must not depend on other modules' helpers).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

fn slope() -> TensorDecl {
    TensorDecl::per_head("slope", Scalar::F32)
}

fn decls() -> Vec<TensorDecl> {
    vec![TensorDecl::per_head("slope", Scalar::F32), TensorDecl::per_batch("off", Scalar::I32), TensorDecl::per_head("win", Scalar::I32)]
}

fn tensors() -> Tensors {
    Tensors::new().f32("slope", vec![0.5, 0.25, 0.125, 0.0625]).i32("off", vec![0, 3, -2, 17]).i32("win", vec![4, 16, 64, 0])
}

// ---------------------------------------------------------------------------------------------------
// Random expressions, as text, typed by construction (most pass the checker; overflow refusals are fine).

struct Gen<'r> {
    rng: &'r mut Rng,
    score: bool,
}

impl Gen<'_> {
    fn int(&mut self, d: u32) -> String {
        let leaf = d == 0 || self.rng.chance(0.3);
        if leaf {
            return match self.rng.below(7) {
                0 => self.rng.range(-40, 300).to_string(),
                1 | 2 => "q_idx".into(),
                3 | 4 => "kv_idx".into(),
                5 => ["b", "h", "off[b]", "win[h]"][self.rng.below(4) as usize].into(),
                _ => self.rng.range(1, 9).to_string(),
            };
        }
        match self.rng.below(9) {
            0 | 1 => format!("({} + {})", self.int(d - 1), self.int(d - 1)),
            2 | 3 => format!("({} - {})", self.int(d - 1), self.int(d - 1)),
            4 => format!("({} * {})", self.int(d - 1), self.rng.range(-3, 4)),
            5 => format!("({} // {})", self.int(d - 1), [1, 2, 3, 7, 64, -5][self.rng.below(6) as usize]),
            6 => format!("({} % {})", self.int(d - 1), [2, 3, 16, 128, -4][self.rng.below(5) as usize]),
            7 => format!("{}({}, {})", ["min", "max"][self.rng.below(2) as usize], self.int(d - 1), self.int(d - 1)),
            _ => match self.rng.below(2) {
                0 => format!("abs({})", self.int(d - 1)),
                _ => format!("where({}, {}, {})", self.boolean(d - 1), self.int(d - 1), self.int(d - 1)),
            },
        }
    }

    fn float(&mut self, d: u32) -> String {
        let leaf = d == 0 || self.rng.chance(0.25);
        if leaf {
            return match self.rng.below(6) {
                0 => format!("{:.3}", self.rng.unit() * 8.0 - 4.0),
                1 | 2 if self.score => "score".into(),
                3 => "slope[h]".into(),
                _ => format!("({} * 0.01)", self.int(1)),
            };
        }
        let x = |g: &mut Self| g.float(d - 1);
        match self.rng.below(14) {
            0 | 1 => format!("({} + {})", x(self), x(self)),
            2 => format!("({} - {})", x(self), x(self)),
            3 | 4 => format!("({} * {})", x(self), x(self)),
            5 => format!("({} / {})", x(self), ["3.0", "-0.5", "(abs(score) + 1.0)", "(1.0 + exp(score))", "max(slope[h], 0.01)"][self.rng.below(5) as usize]),
            6 => format!("tanh({})", x(self)),
            7 => format!("exp({} * 0.1)", x(self)),
            8 => format!("exp2(min({}, 8.0))", x(self)),
            9 => format!("log(abs({}) + 0.5)", x(self)),
            10 => format!("sqrt(abs({}) + 0.25)", x(self)),
            11 => format!("{}({}, {})", ["min", "max"][self.rng.below(2) as usize], x(self), x(self)),
            12 => format!("where({}, {}, {})", self.boolean(d - 1), x(self), x(self)),
            _ => format!("-{}", x(self)),
        }
    }

    fn boolean(&mut self, d: u32) -> String {
        let cmp = ["<", "<=", ">", ">=", "==", "!="][self.rng.below(6) as usize];
        if d == 0 || self.rng.chance(0.35) {
            return if self.rng.chance(0.75) {
                format!("{} {cmp} {}", self.int(d.min(2)), self.int(d.min(2)))
            } else {
                format!("{} {cmp} {}", self.float(d.min(1)), self.float(d.min(1)))
            };
        }
        match self.rng.below(5) {
            0 | 1 => format!("({} && {})", self.boolean(d - 1), self.boolean(d - 1)),
            2 | 3 => format!("({} || {})", self.boolean(d - 1), self.boolean(d - 1)),
            _ => format!("!({})", self.boolean(d - 1)),
        }
    }
}

fn random_score_mods(seed: u64, n: usize) -> Vec<ScoreMod> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    let mut tries = 0;
    while out.len() < n {
        tries += 1;
        let d = rng.range(1, 4) as u32;
        let text = Gen { rng: &mut rng, score: true }.float(d);
        let text = if text.contains("score") { text } else { format!("score + {text}") };
        if let Ok(m) = ScoreMod::parse(&text, &decls()) {
            out.push(m);
        }
    }
    assert!(tries < 2 * n, "the generator should make mostly valid score_mods ({n} of {tries})");
    out
}

fn random_masks(seed: u64, n: usize) -> Vec<MaskMod> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    let mut tries = 0;
    while out.len() < n {
        tries += 1;
        let d = rng.range(0, 3) as u32;
        let text = Gen { rng: &mut rng, score: false }.boolean(d);
        if let Ok(m) = MaskMod::parse(&text, &decls()) {
            out.push(m);
        }
    }
    assert!(tries < 2 * n, "the generator should make mostly valid masks ({n} of {tries})");
    out
}

// ---------------------------------------------------------------------------------------------------
// The language

#[test]
fn the_issue_examples_parse_print_and_evaluate() {
    let alibi = ScoreMod::parse("score + slope[h] * (kv_idx - q_idx)", &[slope()]).unwrap();
    assert_eq!(alibi.text(), "score + slope[h] * (kv_idx - q_idx)");
    assert_eq!(alibi.key(), "score_mod(slope: f32[h]): score + slope[h] * (kv_idx - q_idx)");
    assert_eq!(alibi.hash().len(), 8);
    let t = Tensors::new().f32("slope", vec![0.5, 0.25]);
    assert_eq!(alibi.eval_score(0, 1, 10, 4, 2.0, &t), 2.0 + 0.25 * -6.0);
    assert_eq!(alibi.grad_text(), "1.0");

    let window = MaskMod::parse("q_idx - kv_idx < 256", &[]).unwrap();
    assert_eq!(window.key(), "mask_mod: q_idx - kv_idx < 256");
    assert!(window.eval_mask(0, 0, 300, 45, &Tensors::new()));
    assert!(!window.eval_mask(0, 0, 300, 44, &Tensors::new()));

    let softcap = ScoreMod::parse("30.0 * tanh(score / 30.0)", &[]).unwrap();
    assert!((softcap.eval_score(0, 0, 0, 0, 45.0, &Tensors::new()) - 30.0 * (1.5f64).tanh()).abs() < 1e-12);
    assert_eq!(softcap.grad_text(), "1.0 - tanh(score / 30.0) * tanh(score / 30.0)");
}

#[test]
fn canonical_text_normalizes_spelling_and_is_a_fixpoint() {
    let a = ScoreMod::parse("  score+slope[h]*( (kv_idx) -q_idx )", &[slope()]).unwrap();
    let b = ScoreMod::parse("score + slope[h] * (kv_idx - q_idx)", &[slope()]).unwrap();
    assert_eq!(a.key(), b.key());
    assert_eq!(a.hash(), b.hash());
    // Integer literals promoted to floats print as floats; the meaning, not the spelling, is the key.
    assert_eq!(ScoreMod::parse("score / 30", &[]).unwrap().text(), "score / 30.0");
    assert_eq!(ScoreMod::parse("score / 30.", &[]).unwrap().key(), ScoreMod::parse("score/30.0", &[]).unwrap().key());
    assert_eq!(MaskMod::parse("(q_idx - kv_idx) - 3 >= -(2)", &[]).unwrap().text(), "q_idx - kv_idx - 3 >= -2");
    assert_eq!(MaskMod::parse("q_idx - (kv_idx - 3) >= 0", &[]).unwrap().text(), "q_idx - (kv_idx - 3) >= 0");
    assert_eq!(ScoreMod::parse("where(q_idx >= kv_idx, score, -inf)", &[]).unwrap().text(), "where(q_idx >= kv_idx, score, -inf)");
    // Different declarations are different keys (the ABI differs).
    let c = ScoreMod::parse("score + slope[h] * (kv_idx - q_idx)", &[slope(), TensorDecl::per_batch("unused", Scalar::I32)]).unwrap();
    assert_ne!(c.hash(), b.hash());
    // The hash is part of kernel names and disk caches: it must not change between releases.
    assert_eq!(b.hash(), &short_sha(b.key()));

    for m in random_score_mods(7, 300) {
        let again = ScoreMod::parse(m.text(), m.tensors()).unwrap();
        assert_eq!(again.text(), m.text());
        assert_eq!(again.expr(), m.expr(), "{}", m.text());
    }
    for m in random_masks(8, 300) {
        let again = MaskMod::parse(m.text(), m.tensors()).unwrap();
        assert_eq!(again.text(), m.text());
        assert_eq!(again.expr(), m.expr(), "{}", m.text());
    }
}

fn short_sha(s: &str) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(s.as_bytes())[..4].iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn stable_hashes() {
    // Fixed values: a change here invalidates every cached modded kernel, so it must be deliberate.
    assert_eq!(builtins::causal(0).unwrap().key(), "mask_mod: kv_idx <= q_idx");
    assert_eq!(builtins::softcap(30.0).unwrap().key(), "score_mod: 30.0 * tanh(score / 30.0)");
    let h = builtins::softcap(30.0).unwrap().hash().to_string();
    assert_eq!(h, short_sha("score_mod: 30.0 * tanh(score / 30.0)"));
}

#[test]
fn the_builder_makes_the_same_trees_as_the_parser() {
    let built = ScoreMod::new(&(Expr::score() + Expr::tensor("slope", Var::H) * (Expr::kv_idx() - Expr::q_idx())), &[slope()]).unwrap();
    let parsed = ScoreMod::parse("score + slope[h] * (kv_idx - q_idx)", &[slope()]).unwrap();
    assert_eq!(built.key(), parsed.key());
    let doc = MaskMod::new(&Expr::q_idx().floor_div(128).ge(Expr::kv_idx().floor_div(128)), &[]).unwrap();
    assert_eq!(doc.text(), "q_idx // 128 >= kv_idx // 128");
    let cap = ScoreMod::new(&(Expr::float(30.0) * tanh(Expr::score() / 30.0)), &[]).unwrap();
    assert_eq!(cap.key(), builtins::softcap(30.0).unwrap().key());
}

fn err_score(src: &str, decls: &[TensorDecl]) -> ModError {
    ScoreMod::parse(src, decls).expect_err(src)
}

fn err_mask(src: &str, decls: &[TensorDecl]) -> ModError {
    MaskMod::parse(src, decls).expect_err(src)
}

#[test]
fn errors_name_the_rule_the_column_and_the_fix() {
    let e = err_score("score + sloe[h] * (kv_idx - q_idx)", &[slope()]);
    assert_eq!(e.rule, Rule::UnknownName);
    assert_eq!(e.column(), Some(9));
    assert!(e.fix.contains("did you mean `slope`"), "{e}");
    let shown = e.to_string();
    assert!(shown.starts_with("score_mod: unknown name: no tensor named `sloe` is declared (column 9)"), "{shown}");
    assert!(shown.contains("\n  score + sloe[h] * (kv_idx - q_idx)\n          ^^^^^^^\nfix: "), "{shown}");

    let e = err_score("score + scroe", &[]);
    assert_eq!((e.rule, e.column()), (Rule::UnknownName, Some(9)));
    assert!(e.fix.contains("did you mean `score`"), "{e}");

    let e = err_mask("score > 0.0", &[]);
    assert_eq!((e.rule, e.column()), (Rule::ScoreInMask, Some(1)));

    let e = err_score("score + slope[q_idx]", &[slope()]);
    assert_eq!((e.rule, e.column()), (Rule::TensorIndex, Some(15)));
    let e = err_score("score + slope[b]", &[slope()]);
    assert_eq!(e.rule, Rule::TensorIndex);
    assert!(e.fix.contains("slope[h]"), "{e}");
    let e = err_score("score + slope", &[slope()]);
    assert_eq!(e.rule, Rule::TensorIndex);

    // Types: bool where a number goes, float where // wants ints, number as a mask.
    let e = err_score("score + (q_idx > kv_idx)", &[]);
    assert_eq!((e.rule, e.column()), (Rule::WrongType, Some(9)));
    assert!(e.fix.contains("where(cond, 1.0, 0.0)"), "{e}");
    let e = err_mask("score // 2 > 1", &[]);
    assert_eq!(e.rule, Rule::ScoreInMask);
    let e = err_score("score // 2.0", &[]);
    assert_eq!(e.rule, Rule::WrongType);
    assert!(e.fix.contains("floor(a / b)"), "{e}");
    let e = err_mask("q_idx - kv_idx", &[]);
    assert_eq!(e.rule, Rule::WrongType);
    let e = err_score("q_idx >= kv_idx", &[]);
    assert_eq!(e.rule, Rule::WrongType);
    assert!(e.fix.contains("-inf"), "{e}");
    let e = err_score("where(q_idx, score, 0.0)", &[]);
    assert_eq!((e.rule, e.column()), (Rule::WrongType, Some(7)));
    let e = err_score("where(q_idx > 0, score, q_idx > 1)", &[]);
    assert_eq!(e.rule, Rule::WrongType);

    // Division and modulo: divisors that may be 0 are refused, non-zero ones accepted.
    for (src, col) in
        [("score / (kv_idx - q_idx)", 9), ("score / slope[h]", 9), ("score / score", 9), ("score + q_idx % h", 17), ("score + q_idx // (kv_idx - 1)", 18)]
    {
        let e = err_score(src, &[slope()]);
        assert_eq!((e.rule, e.column()), (Rule::DivisorMayBeZero, Some(col)), "{e}");
        assert!(e.fix.contains("max(x, 1)"), "{e}");
    }
    let e = err_score("score / slope[h]", &[slope()]);
    assert!(e.message.contains("tensor values are not known"), "{e}");
    for ok in [
        "score / 30.0",
        "score / (abs(score) + 1.0)",
        "score + q_idx % (h + 1)",
        "score + q_idx // (kv_idx + 1)",
        "score / max(slope[h], 1e-6)",
        "score / exp(q_idx * 0.001)",
    ] {
        ScoreMod::parse(ok, &[slope()]).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    // exp of a negative argument may underflow to 0 in f32
    assert_eq!(err_score("score / exp(-1.0 * q_idx)", &[]).rule, Rule::DivisorMayBeZero);

    // Overflow-prone constants and intermediates.
    let e = err_mask("q_idx * kv_idx > 0", &[]);
    assert_eq!((e.rule, e.column()), (Rule::Overflow, Some(1)));
    assert!(e.fix.contains("1.0 * q_idx * kv_idx"), "{e}");
    assert!(MaskMod::parse("1.0 * q_idx * kv_idx > 0.0", &[]).is_ok());
    let e = err_mask("q_idx * 1000 > kv_idx", &[]);
    assert_eq!(e.rule, Rule::Overflow);
    let e = err_mask("q_idx < 3000000000", &[]);
    assert_eq!((e.rule, e.column()), (Rule::Overflow, Some(9)));
    let e = err_score("score * 1e39", &[]);
    assert_eq!((e.rule, e.column()), (Rule::Overflow, Some(9)));
    let e = err_score("score + 1e-40", &[]);
    assert_eq!(e.rule, Rule::Overflow);
    assert!(e.message.contains("flush-to-zero"), "{e}");

    // Functions.
    let e = err_score("tanhh(score)", &[]);
    assert_eq!((e.rule, e.column()), (Rule::UnknownFunction, Some(1)));
    assert!(e.fix.contains("did you mean `tanh`"), "{e}");
    let e = err_score("min(score)", &[]);
    assert_eq!(e.rule, Rule::Arity);
    let e = err_score("pow(score, 2)", &[]);
    assert!(e.fix.contains("score * score") || e.fix.contains("x * x"), "{e}");

    // Syntax: Python spellings get their equivalents.
    let e = err_mask("q_idx >= kv_idx & q_idx - kv_idx < 8", &[]);
    assert_eq!((e.rule, e.column()), (Rule::Syntax, Some(17)));
    assert!(e.fix.contains("&&"), "{e}");
    let e = err_mask("0 <= q_idx - kv_idx < 8", &[]);
    assert_eq!(e.rule, Rule::Syntax);
    assert!(e.fix.contains("do not chain"), "{e}");
    let e = err_mask("q_idx >= kv_idx and h < 2", &[]);
    assert_eq!(e.rule, Rule::Syntax);
    assert!(e.fix.contains("&&"), "{e}");
    let e = err_score("score ** 2", &[]);
    assert_eq!((e.rule, e.column()), (Rule::Syntax, Some(7)));
    let e = err_score("score + (1.0", &[]);
    assert_eq!(e.rule, Rule::Syntax);
    assert!(e.message.contains("expected `)`"), "{e}");
    let e = err_score("", &[]);
    assert_eq!(e.rule, Rule::Syntax);

    // Declarations.
    let e = ScoreMod::parse("score", &[TensorDecl::per_head("h", Scalar::F32)]).unwrap_err();
    assert_eq!(e.rule, Rule::Declaration);
    let e = ScoreMod::parse("score", &[slope(), slope()]).unwrap_err();
    assert_eq!(e.rule, Rule::Declaration);
}

#[test]
fn deep_or_long_input_is_an_error_not_a_crash() {
    let deep = format!("{}score{}", "(".repeat(5000), ")".repeat(5000));
    assert_eq!(ScoreMod::parse(&deep, &[]).unwrap_err().rule, Rule::TooComplex);
    let neg = format!("{}score", "-".repeat(3000));
    assert_eq!(ScoreMod::parse(&neg, &[]).unwrap_err().rule, Rule::TooComplex);
    let chain = format!("score{}", " + 1.0".repeat(600));
    assert_eq!(ScoreMod::parse(&chain, &[]).unwrap_err().rule, Rule::TooComplex);
    let mut e = Expr::score();
    for _ in 0..1000 {
        e = e + 1.0;
    }
    assert_eq!(ScoreMod::new(&e, &[]).unwrap_err().rule, Rule::TooComplex);
    let long = "score".to_string() + &" ".repeat(MAX_SOURCE_LEN);
    assert_eq!(ScoreMod::parse(&long, &[]).unwrap_err().rule, Rule::TooComplex);
}

#[test]
fn fuzzed_text_never_panics() {
    let mut rng = Rng(0xF022);
    let pieces = [
        "score",
        "q_idx",
        "kv_idx",
        "b",
        "h",
        "slope",
        "[",
        "]",
        "(",
        ")",
        ",",
        "+",
        "-",
        "*",
        "/",
        "//",
        "%",
        "<",
        "<=",
        "==",
        "!=",
        "&&",
        "||",
        "!",
        "&",
        "|",
        "=",
        "tanh",
        "exp",
        "where",
        "min",
        "abs",
        "1",
        "0",
        "2147483647",
        "2147483648",
        "1e39",
        "1e-40",
        ".5",
        "3.",
        "inf",
        "true",
        " ",
        "é",
        "\u{0}",
        "**",
        "1e",
        "_x",
        "9x",
    ];
    let mut accepted = 0;
    for i in 0..20000 {
        let text: String = if i % 4 == 0 {
            (0..rng.below(40)).map(|_| (rng.below(96) as u8 + 32) as char).collect()
        } else {
            (0..rng.below(14)).map(|_| pieces[rng.below(pieces.len() as u64) as usize]).collect::<Vec<_>>().join(if rng.chance(0.5) { " " } else { "" })
        };
        // Accepted or refused with a message, and what is accepted also renders.
        let s = std::panic::catch_unwind(|| ScoreMod::parse(&text, &decls()).map(|m| (m.ir(), m)));
        let m = std::panic::catch_unwind(|| MaskMod::parse(&text, &decls()).map(|m| (m.ir(), m)));
        let (s, m) = (s.unwrap_or_else(|_| panic!("score_mod panicked on {text:?}")), m.unwrap_or_else(|_| panic!("mask_mod panicked on {text:?}")));
        for e in [s.as_ref().err(), m.as_ref().err()].into_iter().flatten() {
            assert!(!e.message.is_empty() && !e.fix.is_empty(), "{text:?}: {e:?}");
            let _ = e.to_string();
        }
        accepted += s.is_ok() as u32 + m.is_ok() as u32;
    }
    assert!(accepted > 100, "the fuzzer should hit valid expressions too ({accepted})");
}

// ---------------------------------------------------------------------------------------------------
// Semantics

#[test]
fn interpreter_follows_python_semantics() {
    let t = tensors();
    let p = |src: &str, q: i64, kv: i64| ScoreMod::parse(src, &decls()).unwrap().eval_score(1, 2, q, kv, 0.5, &t);
    assert_eq!(p("score + q_idx // 4", 7, 0), 0.5 + 1.0);
    assert_eq!(p("score + (q_idx - kv_idx) // 4", 0, 7), 0.5 - 2.0); // floor, not truncation
    assert_eq!(p("score + (q_idx - kv_idx) % 4", 0, 7), 0.5 + 1.0); // sign of the divisor
    assert_eq!(p("score + (q_idx - kv_idx) % -4", 7, 0), 0.5 - 1.0);
    assert_eq!(p("score + q_idx / 4", 7, 0), 0.5 + 1.75); // true division
    assert_eq!(p("score + off[b] + win[h] + slope[h]", 0, 0), 0.5 + 3.0 + 64.0 + 0.125);
    assert_eq!(p("score * min(q_idx, kv_idx) + max(1, 2.5)", 3, 9), 0.5 * 3.0 + 2.5);
    assert_eq!(p("where(q_idx >= kv_idx, score, -inf)", 0, 9), f64::NEG_INFINITY);
    // f32's range, as the kernel: exp(1000) overflows, so times 0 it is NaN; tiny products flush to 0.
    assert!(p("score + exp(q_idx * 1.0) * 0.0", 1000, 0).is_nan());
    assert_eq!(p("score * 1e-20 * 1e-20", 0, 0), 0.0);
    // The document-causal mask of FlexAttention's examples (blocks of 128 tokens).
    let doc = MaskMod::parse("q_idx // 128 == kv_idx // 128 && q_idx >= kv_idx", &[]).unwrap();
    assert!(doc.eval_mask(0, 0, 200, 130, &t));
    assert!(!doc.eval_mask(0, 0, 200, 127, &t));
    // Misuse of the tensors is an error value with try_eval.
    let m = ScoreMod::parse("score + slope[h]", &[slope()]).unwrap();
    assert!(matches!(m.try_eval(&Point { b: 0, h: 9, q_idx: 0, kv_idx: 0, score: 0.0 }, &t), Err(EvalError::IndexOutOfRange { .. })));
    assert!(matches!(m.try_eval(&Point { b: 0, h: 0, q_idx: 0, kv_idx: 0, score: 0.0 }, &Tensors::new()), Err(EvalError::MissingTensor(_))));
    let bad = Tensors::new().i32("slope", vec![1]);
    assert!(matches!(m.try_eval(&Point { b: 0, h: 0, q_idx: 0, kv_idx: 0, score: 0.0 }, &bad), Err(EvalError::WrongDtype { .. })));
}

#[test]
fn builtins_are_expressions_of_the_language() {
    assert_eq!(builtins::causal(0).unwrap().text(), "kv_idx <= q_idx");
    assert_eq!(builtins::causal(128).unwrap().text(), "kv_idx <= q_idx + 128");
    assert_eq!(builtins::sliding_window(Some(1024), Some(0), 0).unwrap().text(), "kv_idx >= q_idx - 1024 && kv_idx <= q_idx");
    assert_eq!(builtins::sliding_window(None, None, 0).unwrap().text(), "true");
    assert_eq!(builtins::softcap(50.0).unwrap().text(), "50.0 * tanh(score / 50.0)");
    assert!(builtins::softcap(0.0).is_err());
    assert_eq!(builtins::alibi("slope").unwrap().key(), "score_mod(slope: f32[h]): score + slope[h] * (kv_idx - q_idx)");
    assert_eq!(builtins::alibi_symmetric("slope", 0).unwrap().text(), "score - slope[h] * abs(q_idx - kv_idx)");
    // Composition: softcap after ALiBi; a window within causal.
    let both = builtins::alibi("slope").unwrap().then(&builtins::softcap(30.0).unwrap()).unwrap();
    assert_eq!(both.text(), "30.0 * tanh((score + slope[h] * (kv_idx - q_idx)) / 30.0)");
    let t = Tensors::new().f32("slope", vec![0.5]);
    assert!((both.eval_score(0, 0, 10, 2, 1.0, &t) - 30.0 * ((1.0 - 4.0) / 30.0f64).tanh()).abs() < 1e-12);
    let w = builtins::causal(0).unwrap().and(&builtins::sliding_window(Some(256), None, 0).unwrap()).unwrap();
    assert_eq!(w.text(), "kv_idx <= q_idx && kv_idx >= q_idx - 256");
    // FA's (left, right) window matches its definition point by point.
    let m = builtins::sliding_window(Some(5), Some(2), 3).unwrap();
    for q in 0..20 {
        for kv in 0..30 {
            assert_eq!(m.eval_mask(0, 0, q, kv, &Tensors::new()), kv >= q + 3 - 5 && kv <= q + 3 + 2);
        }
    }
}

// ---------------------------------------------------------------------------------------------------
// Gradients

#[test]
fn gradients_match_finite_differences() {
    let t = tensors();
    let mut rng = Rng(99);
    let (mut checked, mut kinks) = (0, 0);
    for m in random_score_mods(11, 400) {
        for _ in 0..6 {
            let (b, h, q, kv) = (rng.range(0, 3), rng.range(0, 3), rng.range(0, 400), rng.range(0, 400));
            let s = rng.unit() * 12.0 - 6.0;
            let f = |x: f64| m.eval_score(b, h, q, kv, x, &t);
            let g = m.eval_grad(b, h, q, kv, s, &t);
            let fd = |step: f64| (f(s + step) - f(s - step)) / (2.0 * step);
            let (d1, d2) = (fd(1e-5), fd(1e-6));
            if !(d1.is_finite() && d2.is_finite() && g.is_finite()) || (d1 - d2).abs() > 1e-4 * (1.0 + d1.abs()) {
                // a kink or a jump (where, min, abs, floor) between the two steps, or an overflow
                kinks += 1;
                continue;
            }
            assert!(
                (g - d1).abs() <= 1e-5 * (1.0 + d1.abs()),
                "{}: d/dscore at score={s} (b={b} h={h} q={q} kv={kv}): symbolic {g} [{}], finite difference {d1}",
                m.text(),
                m.grad_text()
            );
            checked += 1;
        }
    }
    assert!(checked > 2000 && kinks < checked / 4, "checked {checked}, skipped {kinks}");
}

#[test]
fn gradients_simplify() {
    let g = |src: &str| ScoreMod::parse(src, &decls()).unwrap().grad_text();
    assert_eq!(g("score + slope[h] * (kv_idx - q_idx)"), "1.0");
    assert_eq!(g("score * slope[h]"), "slope[h]");
    assert_eq!(g("2.0 * score / 4.0"), "0.5");
    assert_eq!(g("q_idx * 0.5"), "0.0");
    assert_eq!(g("exp(score)"), "exp(score)");
    assert_eq!(g("where(q_idx >= kv_idx, score, -inf)"), "where(q_idx >= kv_idx, 1.0, 0.0)");
    assert_eq!(g("-score"), "-1.0");
    assert_eq!(g("score / 3.0"), "0.3333333333333333");
    assert_eq!(g("score / exp(q_idx * 0.001)"), "1.0 / exp(0.001 * q_idx)");
}

// ---------------------------------------------------------------------------------------------------
// Block sparsity

#[test]
fn block_classification_is_sound_by_brute_force() {
    let t = tensors();
    let mut rng = Rng(1234);
    let (mut decided, mut total) = (0, 0);
    let masks = random_masks(5, 300);
    for m in &masks {
        for _ in 0..25 {
            let (q0, k0) = (rng.range(0, 300), rng.range(0, 300));
            let r = Region {
                q: (q0, q0 + rng.range(0, 40)),
                kv: (k0, k0 + rng.range(0, 40)),
                b: rng.chance(0.5).then(|| rng.range(0, 3)),
                h: rng.chance(0.5).then(|| rng.range(0, 3)),
            };
            let with_values = rng.chance(0.5);
            let class = m.classify(&r, with_values.then_some(&t));
            total += 1;
            if class == BlockClass::Partial {
                continue;
            }
            decided += 1;
            let bs: Vec<i64> = r.b.map_or((0..4).collect(), |b| vec![b]);
            let hs: Vec<i64> = r.h.map_or((0..4).collect(), |h| vec![h]);
            for &b in &bs {
                for &h in &hs {
                    for q in r.q.0..=r.q.1 {
                        for kv in r.kv.0..=r.kv.1 {
                            let keep = m.eval_mask(b, h, q, kv, &t);
                            assert_eq!(
                                keep,
                                class == BlockClass::FullyVisible,
                                "{}: {class:?} on {r:?} (values {with_values}) but keep={keep} at b={b} h={h} q={q} kv={kv}",
                                m.text()
                            );
                        }
                    }
                }
            }
        }
    }
    assert!(decided * 5 > total, "the analysis should decide a fair share of blocks ({decided} of {total})");
}

#[test]
fn classification_decides_the_common_masks_exactly() {
    let causal = builtins::causal(0).unwrap();
    let c = |q: (i64, i64), kv: (i64, i64)| causal.classify(&Region::new(q, kv), None);
    assert_eq!(c((128, 255), (0, 127)), BlockClass::FullyVisible);
    assert_eq!(c((128, 255), (128, 255)), BlockClass::Partial);
    assert_eq!(c((128, 255), (256, 383)), BlockClass::FullyMasked);
    let w = builtins::sliding_window(Some(1024), Some(0), 0).unwrap();
    assert_eq!(w.classify(&Region::new((4096, 4223), (2048, 2175)), None), BlockClass::FullyMasked);
    assert_eq!(w.classify(&Region::new((4096, 4223), (3200, 3327)), None), BlockClass::FullyVisible);
    assert_eq!(w.classify(&Region::new((4096, 4223), (3072, 3199)), None), BlockClass::Partial);
    let doc = MaskMod::parse("q_idx // 128 == kv_idx // 128", &[]).unwrap();
    assert_eq!(doc.classify(&Region::new((128, 255), (128, 255)), None), BlockClass::FullyVisible);
    assert_eq!(doc.classify(&Region::new((128, 255), (0, 127)), None), BlockClass::FullyMasked);
    // A per-head window: decided once the head (and the values) are known.
    let win = MaskMod::parse("q_idx - kv_idx < win[h] && q_idx >= kv_idx", &[TensorDecl::per_head("win", Scalar::I32)]).unwrap();
    let t = Tensors::new().i32("win", vec![64, 4096]);
    let r = Region { q: (1000, 1063), kv: (0, 63), b: None, h: Some(0) };
    assert_eq!(win.classify(&r, Some(&t)), BlockClass::FullyMasked);
    assert_eq!(win.classify(&r, None), BlockClass::Partial);
    assert_eq!(win.classify(&Region { h: Some(1), ..r }, Some(&t)), BlockClass::FullyVisible);
    assert_eq!(causal.classify(&Region::new((5, 4), (0, 0)), None), BlockClass::FullyMasked);
    // The whole grid at once: causal over 3 x 3 blocks of 64 (the last cut at 150).
    use BlockClass::*;
    assert_eq!(
        causal.block_mask((150, 150), (64, 64), None, None, None),
        vec![Partial, FullyMasked, FullyMasked, FullyVisible, Partial, FullyMasked, FullyVisible, FullyVisible, Partial]
    );
    // Per-batch document boundaries from a tensor: known values decide the blocks.
    let docs = MaskMod::parse("(q_idx < split[b]) == (kv_idx < split[b])", &[TensorDecl::per_batch("split", Scalar::I32)]).unwrap();
    let t = Tensors::new().i32("split", vec![128]);
    assert_eq!(docs.block_mask((256, 256), (128, 128), Some(0), None, Some(&t)), vec![FullyVisible, FullyMasked, FullyMasked, FullyVisible]);
    assert!(builtins::sliding_window(None, None, 0).unwrap().keeps_all());
    assert!(ScoreMod::parse("(score)", &[]).unwrap().is_identity());
    assert!(!builtins::softcap(30.0).unwrap().is_identity());
}

/// Random masks built from affine atoms in kv_idx (what `kv_bounds` understands) mixed with others.
fn random_affine_masks(seed: u64, n: usize) -> Vec<MaskMod> {
    let mut rng = Rng(seed);
    let mut out = Vec::new();
    while out.len() < n {
        let atom = |rng: &mut Rng| -> String {
            let cmp = ["<", "<=", ">", ">=", "==", "!="][rng.below(6) as usize];
            let c = rng.range(-200, 200);
            match rng.below(8) {
                0 | 1 => format!("q_idx - kv_idx {cmp} {c}"),
                2 => format!("kv_idx {cmp} q_idx + {c}"),
                3 => format!("kv_idx + win[h] {cmp} q_idx + {}", c / 4),
                4 => format!("-kv_idx + {}*q_idx {cmp} {c}", rng.range(-2, 2)),
                5 => format!("q_idx {cmp} {}", rng.range(0, 300)),
                6 => format!("kv_idx // 16 {cmp} q_idx // 16 + {}", rng.range(-4, 4)),
                _ => format!("kv_idx - off[b] {cmp} {}", rng.range(0, 300)),
            }
        };
        let k = rng.range(1, 4);
        let mut text = atom(&mut rng);
        for _ in 1..k {
            let op = ["&&", "&&", "||"][rng.below(3) as usize];
            let next = if rng.chance(0.15) { format!("!({})", atom(&mut rng)) } else { atom(&mut rng) };
            text = format!("({text}) {op} {next}");
        }
        if rng.chance(0.1) {
            text = format!("where(h < 2, {text}, {})", atom(&mut rng));
        }
        if let Ok(m) = MaskMod::parse(&text, &decls()) {
            out.push(m);
        }
    }
    out
}

#[test]
fn key_bounds_are_sound_by_brute_force() {
    let t = tensors();
    let mut rng = Rng(77);
    let n_kv = 400;
    let (mut bounded, mut visible_keys) = (0, 0);
    for m in random_affine_masks(3, 400) {
        for _ in 0..8 {
            let q0 = rng.range(0, 350);
            let q = (q0, q0 + rng.range(0, 48));
            let (b, h) = (rng.range(0, 3), rng.range(0, 3));
            let k = m.tile_keys(q, b, h, &t).unwrap();
            bounded += (k.needed.0 > 0 || k.needed.1 < n_kv) as u32;
            for kv in 0..n_kv {
                let in_needed = kv >= k.needed.0 && kv <= k.needed.1;
                let in_visible = kv >= k.visible.0 && kv <= k.visible.1;
                visible_keys += in_visible as u32;
                for qi in q.0..=q.1 {
                    let keep = m.eval_mask(b, h, qi, kv, &t);
                    assert!(!keep || in_needed, "{}: q tile {q:?} (b={b} h={h}) needs keys {:?}, but q={qi} keeps kv={kv}", m.text(), k.needed);
                    assert!(keep || !in_visible, "{}: q tile {q:?} (b={b} h={h}) sees {:?} unmasked, but q={qi} masks kv={kv}", m.text(), k.visible);
                }
            }
            // The block range covers the needed keys and its full blocks are visible.
            let br = m.blocks(q, 64, n_kv, b, h, &t).unwrap();
            for kv in 0..n_kv {
                let block = kv / 64;
                if (q.0..=q.1).any(|qi| m.eval_mask(b, h, qi, kv, &t)) {
                    assert!(block >= br.first && block <= br.last, "{}: {br:?} misses kv={kv}", m.text());
                }
                if block >= br.full_first && block <= br.full_last {
                    assert!((q.0..=q.1).all(|qi| m.eval_mask(b, h, qi, kv, &t)), "{}: {br:?} calls block {block} full, kv={kv}", m.text());
                }
            }
        }
    }
    assert!(bounded > 1000 && visible_keys > 100_000, "bounds should bite ({bounded} bounded tiles, {visible_keys} visible keys)");
}

#[test]
fn window_cost_grows_with_the_window_not_the_sequence() {
    let n = 16384;
    let w = builtins::sliding_window(Some(1024), Some(0), 0).unwrap();
    assert!(w.kv_bounds().skips_blocks());
    let none = Tensors::new();
    let mut visited = 0;
    for tile in 0..n / 128 {
        let q = (tile * 128, tile * 128 + 127);
        let r = w.blocks(q, 128, n, 0, 0, &none).unwrap();
        visited += r.last - r.first + 1;
        // exactly the blocks that hold a kept key
        let first_key = (q.0 - 1024).max(0);
        assert_eq!((r.first, r.last), (first_key / 128, q.1 / 128), "tile {tile}");
        // masked: the diagonal block and the window's far edge
        assert!(r.last - r.full_last <= 1 && r.full_first - r.first <= 1, "{r:?}");
    }
    let tiles = n / 128;
    assert!(visited <= tiles * 10, "{visited} blocks for {tiles} tiles: O(window), not O(N)");
    // Causal with a bottom-right offset, and a per-head window read from its tensor.
    let c = builtins::causal(100).unwrap();
    let r = c.blocks((0, 127), 64, 1000, 0, 0, &none).unwrap();
    // query 0 sees keys 0..=100 only: block 1 (64..=127) is masked for it
    assert_eq!((r.first, r.last, r.full_first, r.full_last), (0, 3, 0, 0));
    let win = MaskMod::parse("q_idx - kv_idx < win[h] && kv_idx <= q_idx", &[TensorDecl::per_head("win", Scalar::I32)]).unwrap();
    let t = Tensors::new().i32("win", vec![256, 1024]);
    let r = win.blocks((4096, 4223), 128, n, 0, 1, &t).unwrap();
    assert_eq!((r.first, r.last), ((4096 - 1023) / 128, 4223 / 128));
    // Nothing structural to bound: every block, all masked.
    let odd = MaskMod::parse("(q_idx + kv_idx) % 2 == 0", &[]).unwrap();
    assert!(!odd.kv_bounds().skips_blocks());
}

// ---------------------------------------------------------------------------------------------------
// IR

fn module_of(ir: &ModIr) -> String {
    ir.render_function("f").unwrap()
}

#[test]
fn rendered_ir_verifies_and_lowers_to_ptx() {
    let mut n = 0;
    for m in random_score_mods(21, 150) {
        for ir in [m.ir(), m.ir_with_grad()] {
            let text = module_of(&ir);
            verify_ir(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", m.text()));
            n += 1;
        }
    }
    for m in random_masks(22, 150).into_iter().chain(random_affine_masks(23, 100)) {
        let text = module_of(&m.ir());
        verify_ir(&text).unwrap_or_else(|e| panic!("{}: {e}\n{text}", m.text()));
        n += 1;
    }
    assert!(n > 500);
    // Every function of the language through the NVPTX backend (no call to an unknown intrinsic).
    let all = ScoreMod::parse(
        "tanh(score) + exp(score) + exp2(score) + log(abs(score) + 1.0) + log2(abs(score) + 1.0) + sqrt(abs(score)) \
         + min(score, 1.0) + max(score, slope[h]) + floor(score) + ceil(score) + abs(q_idx - kv_idx) + min(q_idx, kv_idx) + max(h, b) \
         + (q_idx - kv_idx) // 3 + (q_idx - kv_idx) % 5 + q_idx // 64 + q_idx % 64 + score / slope[h] * 0.0 + where(off[b] > 0, 1.0, 2.0)",
        &[slope(), TensorDecl::per_batch("off", Scalar::I32)],
    );
    // score / slope[h] is refused (may be 0): the same with a provable divisor
    assert_eq!(all.unwrap_err().rule, Rule::DivisorMayBeZero);
    let all = ScoreMod::parse(
        "tanh(score) + exp(score) + exp2(score) + log(abs(score) + 1.0) + log2(abs(score) + 1.0) + sqrt(abs(score)) \
         + min(score, 1.0) + max(score, slope[h]) + floor(score) + ceil(score) + abs(q_idx - kv_idx) + min(q_idx, kv_idx) + max(h, b) \
         + (q_idx - kv_idx) // 3 + (q_idx - kv_idx) % 5 + q_idx // 64 + q_idx % 64 + score / max(slope[h], 0.5) + where(off[b] > 0, 1.0, 2.0)",
        &[slope(), TensorDecl::per_batch("off", Scalar::I32)],
    )
    .unwrap();
    for cpu in ["sm_90a", "sm_80"] {
        let ptx = compile_ptx(&module_of(&all.ir_with_grad()), cpu).unwrap_or_else(|e| panic!("{cpu}: {e}"));
        for inst in [
            "tanh.approx.f32",
            "ex2.approx.ftz.f32",
            "lg2.approx.ftz.f32",
            "sqrt.approx.ftz.f32",
            "cvt.rmi.f32.f32",
            "cvt.rpi.f32.f32",
            "min.s32",
            "max.s32",
            "abs.s32",
            "shr.u32",
        ] {
            assert!(ptx.contains(inst), "{cpu}: {inst} missing from\n{ptx}");
        }
    }
    let mask = random_affine_masks(24, 1).pop().unwrap();
    compile_ptx(&module_of(&mask.ir()), "sm_90a").unwrap();
    // What LLVM 19 does with the intrinsic name one might guess for tanh: an undefined function.
    let guess = "target triple = \"nvptx64-nvidia-cuda\"\ndeclare float @llvm.nvvm.tanh.approx.f32(float)\ndefine float @f(float %x) {\n  %t = call float @llvm.nvvm.tanh.approx.f32(float %x)\n  ret float %t\n}\n";
    assert!(compile_ptx(guess, "sm_90a").unwrap_err().contains("undefined function"));
}

#[test]
fn softcap_lowers_to_one_mufu_tanh_and_shares_it_with_its_gradient() {
    let m = builtins::softcap(30.0).unwrap();
    let ir = m.ir_with_grad();
    let pin = ProgramInputs { b: "%b", h: "%h", tensors: &[] };
    let pro = ir.render_prologue(&pin, "sc").unwrap();
    let el = ir.render_element(&pro, &ElementInputs { q_idx: "%q", kv_idx: "%k", score: "%s" }, "sc.e0").unwrap();
    assert_eq!(el.text.matches("tanh.approx.f32").count(), 1, "{}", el.text);
    // score / 30.0 became a multiplication by the reciprocal
    assert!(!el.text.contains("fdiv"), "{}", el.text);
    assert!(el.text.contains("fmul contract float %s, 0x3FA1111120000000"), "{}", el.text);
    assert!(el.grad.is_some());
    let ptx = compile_ptx(&module_of(&ir), "sm_90a").unwrap();
    assert_eq!(ptx.matches("tanh.approx.f32").count(), 2, "one per function (value, gradient):\n{ptx}");
}

#[test]
fn per_head_values_are_loaded_once_in_the_prologue() {
    let m = builtins::alibi("slope").unwrap();
    let ir = m.ir();
    assert_eq!(ir.prologue_values(), 1);
    let pro = ir.render_prologue(&ProgramInputs { b: "%b", h: "%head", tensors: &["%alibi_slopes"] }, "alibi").unwrap();
    assert!(pro.text.contains("getelementptr inbounds float, ptr addrspace(1) %alibi_slopes, i32 %head"), "{}", pro.text);
    assert!(pro.text.contains("load float, ptr addrspace(1) %alibi.0, align 4"), "{}", pro.text);
    let el = ir.render_element(&pro, &ElementInputs { q_idx: "%q", kv_idx: "%k", score: "%s" }, "alibi.e").unwrap();
    assert!(!el.text.contains("load"), "{}", el.text);
    // kv_idx - q_idx is exact in f32: converted per row and column (shared by early-cse), subtracted as floats
    assert_eq!(
        el.text,
        "  %alibi.e.0 = sitofp i32 %k to float\n  %alibi.e.1 = sitofp i32 %q to float\n  %alibi.e.2 = fsub contract float %alibi.e.0, %alibi.e.1\n  %alibi.e.3 = fmul contract float %alibi.1, %alibi.e.2\n  %alibi.e.4 = fadd contract float %s, %alibi.e.3\n"
    );
    assert_eq!(el.value, "%alibi.e.4");
    // A sum of two positions may exceed 2^24: converted after the integer addition.
    let sum = ScoreMod::parse("score + (q_idx + kv_idx) * 0.5", &[]).unwrap().ir();
    let pro = sum.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &[] }, "s").unwrap();
    let el = sum.render_element(&pro, &ElementInputs { q_idx: "%q", kv_idx: "%k", score: "%s" }, "s.e").unwrap();
    assert!(el.text.starts_with("  %s.e.0 = add i32 %q, %k\n  %s.e.1 = sitofp i32 %s.e.0 to float\n"), "{}", el.text);
    // Uniform divisors: the reciprocal is computed once per program.
    let t = ScoreMod::parse("score / max(temp[h], 0.01)", &[TensorDecl::per_head("temp", Scalar::F32)]).unwrap().ir();
    let pro = t.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &["%temp"] }, "t").unwrap();
    assert!(pro.text.contains("fdiv float 0x3FF0000000000000"), "{}", pro.text);
    let el = t.render_element(&pro, &ElementInputs { q_idx: "%q", kv_idx: "%k", score: "%s" }, "t.e").unwrap();
    // the prologue: address, load, maxnum, reciprocal
    assert_eq!(el.text, "  %t.e.0 = fmul contract float %s, %t.3\n");
    // A mask whose per-program part is a whole condition.
    let m = MaskMod::parse("q_idx >= kv_idx || off[b] < 0", &[TensorDecl::per_batch("off", Scalar::I32)]).unwrap().ir();
    assert_eq!(m.prologue_values(), 1);
    let pro = m.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &["%off"] }, "m").unwrap();
    assert!(pro.text.ends_with("  %m.1 = load i32, ptr addrspace(1) %m.0, align 4\n  %m.2 = icmp slt i32 %m.1, 0\n"), "{}", pro.text);
    let el = m.render_element(&pro, &ElementInputs { q_idx: "%q", kv_idx: "%k", score: "" }, "m.e").unwrap();
    assert_eq!(el.text, "  %m.e.0 = icmp sge i32 %q, %k\n  %m.e.1 = or i1 %m.e.0, %m.2\n");
    // Wrong inputs are errors.
    assert!(ir.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &[] }, "x").is_err());
    assert!(ir.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &["%p"] }, "1x").is_err());
}

#[test]
fn tile_ranges_render_as_closed_forms() {
    let w = builtins::sliding_window(Some(1024), Some(0), 0).unwrap().ir();
    let pro = w.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &[] }, "w").unwrap();
    let r = w.render_tile_range(&pro, "%q0", "%q1", "w.t").unwrap();
    assert_eq!(r.text, "  %w.t.0 = add i32 %q0, -1024\n  %w.t.1 = add i32 %q1, -1024\n");
    assert_eq!((r.needed_lo.as_deref(), r.needed_hi.as_deref()), (Some("%w.t.0"), Some("%q1")));
    assert_eq!(r.visible, Some((Some("%w.t.1".into()), Some("%q0".into()))));
    let s = builtins::softcap(30.0).unwrap().ir();
    assert!(s.render_tile_range(&pro, "%q0", "%q1", "x").is_err());
    // Per-head window: the bound reads the window in the prologue.
    let m = MaskMod::parse("q_idx - kv_idx < win[h] && kv_idx <= q_idx", &[TensorDecl::per_head("win", Scalar::I32)]).unwrap().ir();
    let pro = m.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &["%win"] }, "m").unwrap();
    let r = m.render_tile_range(&pro, "%q0", "%q1", "m.t").unwrap();
    assert!(pro.text.contains("load i32"), "{}", pro.text);
    assert!(r.text.contains("add i32 %q0, %m."), "{}", r.text);
}

#[test]
fn block_ranges_render_for_the_k_v_loop() {
    let w = builtins::sliding_window(Some(1024), Some(0), 0).unwrap().ir();
    let pro = w.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &[] }, "w").unwrap();
    let br = w.render_block_range(&pro, "%q0", "%q1", 128, "%n_kv", "w.b").unwrap();
    // BLOCK_N a power of two: the divisions are shifts after optimization
    assert!(br.text.contains("udiv i32 %w.b.3, 128"), "{}", br.text);
    assert!(w.render_block_range(&pro, "%q0", "%q1", 0, "%n", "x").is_err());
    let ptx = compile_ptx(&module_of(&w), "sm_90a").unwrap();
    assert!(ptx.contains("shr.u32") || ptx.contains("shr.s32"), "{ptx}");
}

#[test]
fn declarations_merge_with_the_templates_own() {
    let a = ScoreMod::parse("exp(score) + max(score, 0.0) + tanh(score)", &[]).unwrap().ir();
    let b = MaskMod::parse("min(q_idx, 5) < kv_idx", &[]).unwrap().ir();
    let template = "declare float @llvm.nvvm.ex2.approx.ftz.f(float)\ndeclare float @llvm.maxnum.f32(float, float)\n";
    let add = missing_declarations(&[&a, &b], template);
    // a mask's block ranges clamp with smin and smax
    assert_eq!(add, "declare i32 @llvm.smax.i32(i32, i32)\ndeclare i32 @llvm.smin.i32(i32, i32)\n");
    let full = missing_declarations(&[&a, &b], "");
    assert_eq!(full.lines().count(), 4);
    // tanh is inline asm: nothing to declare
    assert!(!full.contains("tanh"));
    verify_ir(&format!("{template}{add}")).unwrap();
}

#[test]
fn rendering_takes_microseconds() {
    let m = builtins::alibi("slope").unwrap().then(&builtins::softcap(30.0).unwrap()).unwrap();
    let t0 = Instant::now();
    let ir = m.ir_with_grad();
    let lower = t0.elapsed();
    let pro = ir.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &["%s"] }, "p").unwrap();
    let t1 = Instant::now();
    let mut bytes = 0;
    let prefixes: Vec<String> = (0..128).map(|i| format!("e{i}")).collect();
    for p in &prefixes {
        bytes += ir.render_element(&pro, &ElementInputs { q_idx: "%q", kv_idx: "%k", score: "%x" }, p).unwrap().text.len();
    }
    let per_element = t1.elapsed() / 128;
    eprintln!("lower+check {lower:?}, render {per_element:?} per element ({bytes} bytes for 128)");
    assert!(per_element.as_micros() < 200, "{per_element:?}");
    let t2 = Instant::now();
    let _ = ScoreMod::parse("30.0 * tanh((score + slope[h] * (kv_idx - q_idx)) / 30.0)", &[slope()]).unwrap();
    assert!(t2.elapsed().as_millis() < 5, "parse + check + gradient: {:?}", t2.elapsed());
}

// ---------------------------------------------------------------------------------------------------
// The kernel's arithmetic against the interpreter, on a GPU. `cargo test --test mods -- --ignored
// export_gpu_cases` with FLASHGEN_MODS_GPU_DIR=<dir> writes one PTX module (a kernel per expression that
// evaluates it at a list of points), the points, the interpreter's values and a runner; on the GPU
// machine `python3 <dir>/run.py <dir>` launches them through libcuda (torch for the buffers) and compares.

const GPU_POINTS: usize = 512;
/// Keys per sequence in the block-range check (points reach 2^24: those clamp to an empty range).
const GPU_N_KV: i64 = 450;

/// The runner: loads cases.ptx, launches every case, compares with expected.f32; exits 1 on disagreement.
const GPU_RUNNER: &str = r#"import ctypes, json, sys, torch
d = sys.argv[1]
cuda = ctypes.CDLL("libcuda.so.1")
torch.zeros(1, device="cuda")  # the primary context, current on this thread
def check(err, what):
    if err != 0:
        raise SystemExit(f"{what}: CUDA error {err}")
mod = ctypes.c_void_p()
check(cuda.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(open(f"{d}/cases.ptx", "rb").read() + b"\0")), "load")
def read(name, dtype):
    return torch.frombuffer(bytearray(open(f"{d}/{name}", "rb").read()), dtype=dtype).cuda()
pts, scores = read("points.i32", torch.int32), read("scores.f32", torch.float32)
tensors = [read("slope.f32", torch.float32), read("off.i32", torch.int32), read("win.i32", torch.int32)]
expected = read("expected.f32", torch.float32).cpu()
expected_ranges = read("ranges.i32", torch.int32).cpu()
range_checks = 0
cases = json.load(open(f"{d}/cases.json"))
n = cases["points"]
bad_cases, worst = [], []
for k, c in enumerate(cases["cases"]):
    f = ctypes.c_void_p()
    check(cuda.cuModuleGetFunction(ctypes.byref(f), mod, c["entry"].encode()), c["entry"])
    out = torch.full((2 * n,), float("nan"), dtype=torch.float32, device="cuda")
    args = [ctypes.c_void_p(pts.data_ptr()), ctypes.c_void_p(scores.data_ptr()), ctypes.c_void_p(out.data_ptr()), ctypes.c_int(n)]
    args += [ctypes.c_void_p(t.data_ptr()) for t in tensors]
    params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
    check(cuda.cuLaunchKernel(f, (n + 127) // 128, 1, 1, 128, 1, 1, 0, None, params, None), "launch")
    torch.cuda.synchronize()
    got, want = out.cpu().view(n, 2), expected[2 * n * k: 2 * n * (k + 1)].view(n, 2)
    cols = [0] if c["kind"] == "mask" else [0, 1]
    misses = 0
    for col in cols:
        g, w = got[:, col], want[:, col]
        same_special = (g.isnan() & w.isnan()) | ((g == w) & g.isinf())
        # f32 rounding of large positions (up to 2^24) scaled into floats cancels: allow for it
        scale = 1 + w.abs() + 5e-6 * pts.cpu().view(n, 4)[:, 2:].abs().max(dim=1).values.float()
        err = ((g - w).abs() / scale).nan_to_num(nan=float("inf"))
        err = torch.where(same_special, torch.zeros_like(err), err)
        tol = 0.0 if c["kind"] == "mask" else 4e-3
        miss = err > tol
        misses += int(miss.sum())
        if miss.any():
            i = int(err.argmax())
            worst.append((float(err[i]), c["text"], col, pts.cpu().view(n, 4)[i].tolist(), float(scores.cpu()[i]), float(g[i]), float(w[i])))
    if c["kind"] == "mask":
        check(cuda.cuModuleGetFunction(ctypes.byref(f), mod, (c["entry"] + "_range").encode()), c["entry"])
        rng_out = torch.zeros(8 * n, dtype=torch.int32, device="cuda")
        args = [ctypes.c_void_p(pts.data_ptr()), ctypes.c_void_p(rng_out.data_ptr()), ctypes.c_int(n), ctypes.c_int(cases["n_kv"])]
        args += [ctypes.c_void_p(t.data_ptr()) for t in tensors]
        params = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
        check(cuda.cuLaunchKernel(f, (n + 127) // 128, 1, 1, 128, 1, 1, 0, None, params, None), "launch range")
        torch.cuda.synchronize()
        want_r = expected_ranges[8 * n * c["range_index"]: 8 * n * (c["range_index"] + 1)]
        bad_r = int((rng_out.cpu() != want_r).sum())
        if bad_r:
            bad_cases.append((bad_r, "tile range", c["text"]))
        range_checks += 1
    # float masks and float-valued jumps (floor, where on floats) may flip at their edges
    limit = (0.02 if c["float_compare"] else 0.0) * n * len(cols)
    if misses > limit:
        bad_cases.append((misses, c["kind"], c["text"]))
worst.sort(reverse=True)
for w in worst[:15]:
    print("worst: rel err %.3g in %s (col %d) at b,h,q,kv=%s score=%g: kernel %r, interpreter %r" % w)
print(f"{len(cases['cases'])} cases x {n} points ({range_checks} with tile ranges): {len(bad_cases)} cases disagree")
for b in bad_cases:
    print("DISAGREE", b)
sys.exit(1 if bad_cases else 0)
"#;

fn has_float_compare(e: &TExpr) -> bool {
    e.any(&|x| match &x.node {
        Node::Cmp(_, a, _) => a.ty == Ty::Float,
        Node::Call(Func::Floor | Func::Ceil, _) => true,
        _ => false,
    })
}

#[test]
#[ignore = "writes the GPU agreement cases into $FLASHGEN_MODS_GPU_DIR (run.py runs them on a GPU)"]
fn export_gpu_cases() {
    let dir = std::path::PathBuf::from(std::env::var("FLASHGEN_MODS_GPU_DIR").expect("FLASHGEN_MODS_GPU_DIR"));
    std::fs::create_dir_all(&dir).unwrap();
    let t = tensors();
    let mut rng = Rng(4242);
    let points: Vec<Point> = (0..GPU_POINTS)
        .map(|i| {
            let big = i % 16 == 0;
            let (q, kv) = if big { (rng.range(0, MAX_POSITION - 1), rng.range(0, MAX_POSITION - 1)) } else { (rng.range(0, 400), rng.range(0, 400)) };
            Point { b: rng.range(0, 3), h: rng.range(0, 3), q_idx: q, kv_idx: kv, score: (rng.unit() * 16.0 - 8.0) as f32 as f64 }
        })
        .collect();

    let mut scores: Vec<ScoreMod> = random_score_mods(31, 200);
    // Every case has the same ABI: the three tensors of decls().
    scores.extend([30.0, 50.0].map(|cap| ScoreMod::new(&builtins::softcap_expr(cap), &decls()).unwrap()));
    scores.push(ScoreMod::parse("score + slope[h] * (kv_idx - q_idx)", &decls()).unwrap());
    scores.push(ScoreMod::parse("score - slope[h] * abs(q_idx + off[b] - kv_idx) + (q_idx - kv_idx) // 7 + (q_idx - kv_idx) % -5", &decls()).unwrap());
    let mut masks: Vec<MaskMod> = random_masks(32, 200);
    masks.extend(random_affine_masks(33, 100));
    masks.push(MaskMod::parse("q_idx // 128 == kv_idx // 128 && q_idx >= kv_idx", &decls()).unwrap());

    let sig: String = decls().iter().enumerate().map(|(i, _)| format!(", ptr addrspace(1) %t{i}")).collect();
    let ptrs: Vec<String> = (0..decls().len()).map(|i| format!("%t{i}")).collect();
    let ptr_refs: Vec<&str> = ptrs.iter().map(String::as_str).collect();
    let mut module = String::from(
        "target triple = \"nvptx64-nvidia-cuda\"\n\ndeclare i32 @llvm.nvvm.read.ptx.sreg.tid.x()\ndeclare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n",
    );
    let irs: Vec<(ModIr, bool, String, bool)> = scores
        .iter()
        .map(|m| (m.ir_with_grad(), true, m.text().to_string(), has_float_compare(m.expr())))
        .chain(masks.iter().map(|m| (m.ir(), false, m.text().to_string(), has_float_compare(m.expr()))))
        .collect();
    module += &missing_declarations(&irs.iter().map(|x| &x.0).collect::<Vec<_>>(), "");
    let mut annotations = Vec::new();
    let mut manifest = Vec::new();
    let mut expected: Vec<f32> = Vec::new();
    let (mut ranges, mut range_cases): (Vec<i32>, usize) = (Vec::new(), 0);
    for (k, (ir, is_score, text, float_compare)) in irs.iter().enumerate() {
        let pro = ir.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &ptr_refs }, "p").unwrap();
        let el = ir.render_element(&pro, &ElementInputs { q_idx: "%q", kv_idx: "%kv", score: "%s" }, "e").unwrap();
        let (value, grad) = if *is_score {
            (el.value.clone(), el.grad.clone().unwrap())
        } else {
            // keep as 1.0 / 0.0
            ("%keep".to_string(), "0.0".to_string())
        };
        let to_float = if *is_score { String::new() } else { format!("  %keep = uitofp i1 {} to float\n", el.value) };
        module += &format!(
            "\ndefine void @case{k}(ptr addrspace(1) %pts, ptr addrspace(1) %scores, ptr addrspace(1) %out, i32 %n{sig}) {{\n\
             entry:\n  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %cta = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n\
             \x20 %base = mul i32 %cta, 128\n  %i = add i32 %base, %tid\n  %ok = icmp slt i32 %i, %n\n  br i1 %ok, label %body, label %done\n\
             body:\n  %i4 = mul i32 %i, 4\n  %pb = getelementptr inbounds i32, ptr addrspace(1) %pts, i32 %i4\n  %b = load i32, ptr addrspace(1) %pb, align 4\n\
             \x20 %ph = getelementptr inbounds i32, ptr addrspace(1) %pb, i32 1\n  %h = load i32, ptr addrspace(1) %ph, align 4\n\
             \x20 %pq = getelementptr inbounds i32, ptr addrspace(1) %pb, i32 2\n  %q = load i32, ptr addrspace(1) %pq, align 4\n\
             \x20 %pk = getelementptr inbounds i32, ptr addrspace(1) %pb, i32 3\n  %kv = load i32, ptr addrspace(1) %pk, align 4\n\
             \x20 %ps = getelementptr inbounds float, ptr addrspace(1) %scores, i32 %i\n  %s = load float, ptr addrspace(1) %ps, align 4\n\
             {}{}{to_float}  %i2 = mul i32 %i, 2\n  %po = getelementptr inbounds float, ptr addrspace(1) %out, i32 %i2\n  store float {value}, ptr addrspace(1) %po, align 4\n\
             \x20 %pg = getelementptr inbounds float, ptr addrspace(1) %po, i32 1\n  store float {grad}, ptr addrspace(1) %pg, align 4\n  br label %done\n\
             done:\n  ret void\n}}\n",
            pro.text, el.text
        );
        annotations.push(format!("ptr @case{k}"));
        let mut entry =
            serde_json::json!({"entry": format!("case{k}"), "kind": if *is_score { "score" } else { "mask" }, "text": text, "float_compare": float_compare});
        if !*is_score {
            // the tile [q, q + 63] of every point: needed lo/hi, visible lo/hi (unbounded: i32::MIN/MAX)
            let pro = ir.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &ptr_refs }, "p").unwrap();
            let r = ir.render_tile_range(&pro, "%q", "%q1", "r").unwrap();
            let br = ir.render_block_range(&pro, "%q", "%q1", 64, "%nkv", "br").unwrap();
            let (vlo, vhi) = r
                .visible
                .clone()
                .map_or(("0".to_string(), "-1".to_string()), |(lo, hi)| (lo.unwrap_or(i32::MIN.to_string()), hi.unwrap_or(i32::MAX.to_string())));
            let fields = [
                r.needed_lo.clone().unwrap_or(i32::MIN.to_string()),
                r.needed_hi.clone().unwrap_or(i32::MAX.to_string()),
                vlo,
                vhi,
                br.first.clone(),
                br.last.clone(),
                br.full_first.clone(),
                br.full_last.clone(),
            ];
            let stores: String = fields
                .iter()
                .enumerate()
                .map(|(j, f)| {
                    format!("  %o{j} = getelementptr inbounds i32, ptr addrspace(1) %po, i32 {j}\n  store i32 {f}, ptr addrspace(1) %o{j}, align 4\n")
                })
                .collect();
            module += &format!(
                "\ndefine void @case{k}_range(ptr addrspace(1) %pts, ptr addrspace(1) %out, i32 %n, i32 %nkv{sig}) {{\n\
                 entry:\n  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()\n  %cta = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()\n\
                 \x20 %base = mul i32 %cta, 128\n  %i = add i32 %base, %tid\n  %ok = icmp slt i32 %i, %n\n  br i1 %ok, label %body, label %done\n\
                 body:\n  %i4 = mul i32 %i, 4\n  %pb = getelementptr inbounds i32, ptr addrspace(1) %pts, i32 %i4\n  %b = load i32, ptr addrspace(1) %pb, align 4\n\
                 \x20 %ph = getelementptr inbounds i32, ptr addrspace(1) %pb, i32 1\n  %h = load i32, ptr addrspace(1) %ph, align 4\n\
                 \x20 %pq = getelementptr inbounds i32, ptr addrspace(1) %pb, i32 2\n  %q = load i32, ptr addrspace(1) %pq, align 4\n  %q1 = add i32 %q, 63\n\
                 {}{}{}  %i8 = mul i32 %i, 8\n  %po = getelementptr inbounds i32, ptr addrspace(1) %out, i32 %i8\n{stores}  br label %done\n\
                 done:\n  ret void\n}}\n",
                pro.text, r.text, br.text
            );
            annotations.push(format!("ptr @case{k}_range"));
            entry["range_index"] = serde_json::json!(range_cases);
            range_cases += 1;
            let m = &masks[k - scores.len()];
            for p in &points {
                let keys = m.tile_keys((p.q_idx, p.q_idx + 63), p.b, p.h, &t).unwrap();
                let c = |v: i64| v.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
                ranges.extend([c(keys.needed.0), c(keys.needed.1), c(keys.visible.0), c(keys.visible.1)]);
                let br = m.blocks((p.q_idx, p.q_idx + 63), 64, GPU_N_KV, p.b, p.h, &t).unwrap();
                ranges.extend([br.first, br.last, br.full_first, br.full_last].map(c));
            }
        }
        manifest.push(entry);
        for p in &points {
            if *is_score {
                let m = &scores[k];
                expected.push(m.eval_score(p.b, p.h, p.q_idx, p.kv_idx, p.score, &t) as f32);
                expected.push(m.eval_grad(p.b, p.h, p.q_idx, p.kv_idx, p.score, &t) as f32);
            } else {
                expected.push(masks[k - scores.len()].eval_mask(p.b, p.h, p.q_idx, p.kv_idx, &t) as i32 as f32);
                expected.push(0.0);
            }
        }
    }
    module += &format!("\n!nvvm.annotations = !{{{}}}\n", (0..annotations.len()).map(|k| format!("!{k}")).collect::<Vec<_>>().join(", "));
    for (k, a) in annotations.iter().enumerate() {
        module += &format!("!{k} = !{{{a}, !\"kernel\", i32 1}}\n");
    }
    let ptx = compile_ptx(&module, "sm_90a").unwrap_or_else(|e| panic!("{e}"));
    let bytes = |v: Vec<[u8; 4]>| v.concat();
    std::fs::write(dir.join("cases.ptx"), ptx).unwrap();
    std::fs::write(dir.join("cases.ll"), &module).unwrap();
    std::fs::write(dir.join("run.py"), GPU_RUNNER).unwrap();
    std::fs::write(dir.join("cases.json"), serde_json::json!({"points": GPU_POINTS, "n_kv": GPU_N_KV, "cases": manifest}).to_string()).unwrap();
    std::fs::write(dir.join("points.i32"), bytes(points.iter().flat_map(|p| [p.b, p.h, p.q_idx, p.kv_idx]).map(|v| (v as i32).to_le_bytes()).collect()))
        .unwrap();
    std::fs::write(dir.join("scores.f32"), bytes(points.iter().map(|p| (p.score as f32).to_le_bytes()).collect())).unwrap();
    std::fs::write(dir.join("expected.f32"), bytes(expected.iter().map(|v| v.to_le_bytes()).collect())).unwrap();
    std::fs::write(dir.join("ranges.i32"), bytes(ranges.iter().map(|v| v.to_le_bytes()).collect())).unwrap();
    let TensorData::F32(slope) = t.get("slope").unwrap().clone() else { panic!() };
    let (TensorData::I32(off), TensorData::I32(win)) = (t.get("off").unwrap().clone(), t.get("win").unwrap().clone()) else { panic!() };
    std::fs::write(dir.join("slope.f32"), bytes(slope.iter().map(|v| v.to_le_bytes()).collect())).unwrap();
    std::fs::write(dir.join("off.i32"), bytes(off.iter().map(|v| v.to_le_bytes()).collect())).unwrap();
    std::fs::write(dir.join("win.i32"), bytes(win.iter().map(|v| v.to_le_bytes()).collect())).unwrap();
    eprintln!("{} cases x {GPU_POINTS} points in {}", irs.len(), dir.display());
}

/// dK/dV's query range: a causal or windowed mask gives the queries that keep a key of [k0, k1] in closed
/// form (causal: from k0 on, unbounded above; a window of 100 left: up to k1 + 100); a mask whose bounds
/// fall as q_idx grows has none (every query block is visited).
#[test]
fn query_ranges_of_masks_whose_bounds_grow_with_the_query() {
    let pro_of = |ir: &ModIr| ir.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &[] }, "p").unwrap();
    let causal = builtins::causal(0).unwrap().ir();
    let r = causal.render_query_range(&pro_of(&causal), "%k0", "%k1", "q").unwrap();
    assert!(r.q_hi.is_none(), "every later query sees the keys: {r:?}");
    assert!(r.q_lo.is_some() && r.text.contains("%k0"), "{r:?}");
    let window = builtins::sliding_window(Some(100), Some(0), 0).unwrap().ir();
    let r = window.render_query_range(&pro_of(&window), "%k0", "%k1", "q").unwrap();
    assert!(r.q_lo.is_some() && r.q_hi.is_some() && r.text.contains("%k1"), "{r:?}");
    let falling = MaskMod::parse("kv_idx >= 1000 - q_idx", &[]).unwrap().ir();
    assert!(falling.render_query_range(&pro_of(&falling), "%k0", "%k1", "q").is_err());
    let none = MaskMod::parse("false", &[]).unwrap().ir();
    let r = none.render_query_range(&pro_of(&none), "%k0", "%k1", "q").unwrap();
    assert_eq!((r.q_lo.as_deref(), r.q_hi.as_deref()), (Some("1"), Some("0")), "no query at all");
}

/// The queries that keep every key of [k0, k1]: causal, from k1 on (unbounded above); a mask that never
/// keeps all of a range proves no such query; a left window, up to k0 + its width.
#[test]
fn visible_query_ranges_are_the_fully_kept_queries() {
    let pro_of = |ir: &ModIr| ir.render_prologue(&ProgramInputs { b: "%b", h: "%h", tensors: &[] }, "p").unwrap();
    let causal = builtins::causal(0).unwrap().ir();
    let r = causal.render_visible_query_range(&pro_of(&causal), "%k0", "%k1", "v").unwrap();
    assert!(r.q_hi.is_none() && r.q_lo.is_some() && r.text.contains("%k1") && !r.text.contains("%k0"), "{r:?}");
    let window = builtins::sliding_window(Some(100), Some(0), 0).unwrap().ir();
    let r = window.render_visible_query_range(&pro_of(&window), "%k0", "%k1", "v").unwrap();
    assert!(r.q_lo.is_some() && r.q_hi.is_some(), "{r:?}");
}

/// Whether key `kv` is in `w` around query `q`'s top-left diagonal (the kernels' window, ALIGN 0).
fn in_window(w: &flashgen::reference::Window, q: i64, kv: i64) -> bool {
    w.left.is_none_or(|l| kv >= q - l as i64) && w.right.is_none_or(|r| kv <= q + r as i64)
}

#[test]
fn masks_that_are_windows_are_found_and_keep_what_the_window_keeps() {
    use flashgen::reference::Window;
    let w = |left: Option<usize>, right: Option<usize>| Window { left, right };
    // FlexAttention's causal, bands, shifted diagonals, builtins, and spellings the bounds normalize
    let windows = [
        ("kv_idx <= q_idx", w(None, Some(0))),
        ("q_idx >= kv_idx", w(None, Some(0))),
        ("kv_idx <= q_idx && q_idx - kv_idx < 256", w(Some(255), Some(0))),
        ("q_idx - kv_idx <= 100 && kv_idx - q_idx <= 7", w(Some(100), Some(7))),
        ("!(kv_idx > q_idx + 3)", w(None, Some(3))),
        ("kv_idx >= q_idx - 5", w(Some(5), None)),
        ("kv_idx == q_idx", w(Some(0), Some(0))),
        ("kv_idx + 1 <= q_idx + 1 && true", w(None, Some(0))),
    ];
    for (text, want) in windows {
        let m = MaskMod::parse(text, &[]).unwrap();
        assert_eq!(m.as_window(), Some(want), "{text}");
    }
    for (l, r, offset) in [(Some(64), Some(0), 0), (None, Some(0), 30), (Some(10), Some(20), 5), (Some(3), None, 0)] {
        let m = builtins::sliding_window(l, r, offset).unwrap();
        let want = w(l.map(|l| (l as i64 - offset) as usize), r.map(|r| (r as i64 + offset) as usize));
        assert_eq!(m.as_window(), Some(want), "sliding_window({l:?}, {r:?}, {offset})");
    }
    // not windows: strictly below the diagonal or a lower bound right of it (the kernels' window sides are
    // unsigned), other slopes, per-element conditions, tensors, per-head widths, unions, nothing bounded
    let decl = [TensorDecl::per_head("win", Scalar::I32)];
    for text in [
        "kv_idx < q_idx",
        "kv_idx >= q_idx + 1",
        "kv_idx <= 2 * q_idx",
        "kv_idx <= q_idx && kv_idx % 2 == 0",
        "kv_idx <= q_idx && q_idx - kv_idx < win[h]",
        "kv_idx <= q_idx || kv_idx >= q_idx + 64",
        "q_idx // 128 >= kv_idx // 128",
        "kv_idx >= 0",
        "q_idx >= 3",
        "kv_idx != q_idx",
    ] {
        let m = MaskMod::parse(text, &decl).unwrap();
        assert_eq!(m.as_window(), None, "{text}");
    }
    // wherever a mask (random ones too) is a window, it keeps exactly the window's keys
    let mut found = 0;
    for m in random_masks(77, 400).iter().chain(windows.iter().map(|(t, _)| MaskMod::parse(t, &[]).unwrap()).collect::<Vec<_>>().iter()) {
        let Some(win) = m.as_window() else { continue };
        found += 1;
        let t = tensors();
        for q in 0..48 {
            for kv in 0..48 {
                for (b, h) in [(0, 0), (1, 2), (3, 3)] {
                    assert_eq!(m.eval_mask(b, h, q, kv, &t), in_window(&win, q, kv), "`{}` at q {q} kv {kv} (b {b} h {h}): window {win:?}", m.text());
                }
            }
        }
    }
    assert!(found >= windows.len(), "{found} windows checked");
}
