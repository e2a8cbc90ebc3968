//! Look-alike letters folded to the Latin letters they imitate, so that a
//! brief spelled with them ("Ѕеnd" with a Cyrillic `Ѕ` and `е`, "ｓｅｎｄ" in
//! full-width letters, "tr\u{200B}ansfer" with a zero-width space) reads to
//! the rules as the word it looks like. Without this, a disguised money verb
//! slips past the stakes rules and a disguised capability verb leaves the
//! planner guessing.
//!
//! Two kinds of letters are folded:
//!
//! - **Compatibility forms** (full-width Latin, mathematical alphanumerics,
//!   Latin small capitals, dotless `ı`) and invisible characters are always
//!   folded or dropped: no language writes words with them.
//! - **Script look-alikes** (Cyrillic `а е о р с у х і ѕ…`, Greek `α ο ρ ι κ
//!   ν…`, a few Armenian) are folded only where they imitate Latin: in a word
//!   that also has Latin letters, or in a word made only of look-alikes inside
//!   a brief that is mostly Latin. A brief written in Russian or Greek keeps
//!   its letters (its words carry letters with no Latin twin), so it stays a
//!   brief in another language rather than becoming Latin nonsense.

/// A word whose letters were folded: as written and as the rules read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldedWord {
    /// The word as written.
    pub written: String,
    /// The word after folding.
    pub read: String,
}

/// Text after folding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Folded {
    /// The folded text.
    pub text: String,
    /// Every word that changed, in order.
    pub words: Vec<FoldedWord>,
}

enum Fold {
    /// Always folded (no language spells words with it).
    Compat(char),
    /// Folded only where it imitates a Latin letter.
    Script(char),
}

/// Characters that render as nothing and can hide inside a word.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
    )
}

fn fold_char(c: char) -> Option<Fold> {
    let compat =
        |base: u32, first: char| char::from_u32(first as u32 + (c as u32 - base)).map(Fold::Compat);
    let script = |l: char| Some(Fold::Script(l));
    match c {
        // Full-width ASCII letters and digits.
        '\u{FF21}'..='\u{FF3A}' => compat(0xFF21, 'A'),
        '\u{FF41}'..='\u{FF5A}' => compat(0xFF41, 'a'),
        '\u{FF10}'..='\u{FF19}' => compat(0xFF10, '0'),
        // Mathematical alphanumerics: styled A–Z a–z in blocks of 52, digits
        // in blocks of 10.
        '\u{1D400}'..='\u{1D6A3}' => {
            let k = (c as u32 - 0x1D400) % 52;
            let base = if k < 26 { 'A' as u32 + k } else { 'a' as u32 + k - 26 };
            char::from_u32(base).map(Fold::Compat)
        }
        '\u{1D7CE}'..='\u{1D7FF}' => {
            char::from_u32('0' as u32 + (c as u32 - 0x1D7CE) % 10).map(Fold::Compat)
        }
        // Latin small capitals and other Latin look-alikes.
        'ᴀ' => Some(Fold::Compat('a')),
        'ʙ' => Some(Fold::Compat('b')),
        'ᴄ' => Some(Fold::Compat('c')),
        'ᴅ' => Some(Fold::Compat('d')),
        'ᴇ' => Some(Fold::Compat('e')),
        'ꜰ' => Some(Fold::Compat('f')),
        'ɢ' | 'ɡ' => Some(Fold::Compat('g')),
        'ʜ' => Some(Fold::Compat('h')),
        'ɪ' | 'ı' => Some(Fold::Compat('i')),
        'ᴊ' => Some(Fold::Compat('j')),
        'ᴋ' => Some(Fold::Compat('k')),
        'ʟ' => Some(Fold::Compat('l')),
        'ᴍ' => Some(Fold::Compat('m')),
        'ɴ' => Some(Fold::Compat('n')),
        'ᴏ' => Some(Fold::Compat('o')),
        'ᴘ' => Some(Fold::Compat('p')),
        'ʀ' => Some(Fold::Compat('r')),
        'ꜱ' => Some(Fold::Compat('s')),
        'ᴛ' => Some(Fold::Compat('t')),
        'ᴜ' => Some(Fold::Compat('u')),
        'ᴠ' => Some(Fold::Compat('v')),
        'ᴡ' => Some(Fold::Compat('w')),
        'ʏ' => Some(Fold::Compat('y')),
        'ᴢ' => Some(Fold::Compat('z')),
        'ɑ' => Some(Fold::Compat('a')),
        // Cyrillic.
        'а' => script('a'),
        'е' => script('e'),
        'о' => script('o'),
        'р' => script('p'),
        'с' => script('c'),
        'у' => script('y'),
        'х' => script('x'),
        'к' => script('k'),
        'і' => script('i'),
        'ј' => script('j'),
        'ѕ' => script('s'),
        'һ' => script('h'),
        'ԁ' => script('d'),
        'ԛ' => script('q'),
        'ԝ' => script('w'),
        'ӏ' => script('l'),
        'ү' => script('y'),
        'А' => script('A'),
        'В' => script('B'),
        'Е' => script('E'),
        'К' => script('K'),
        'М' => script('M'),
        'Н' => script('H'),
        'О' => script('O'),
        'Р' => script('P'),
        'С' => script('C'),
        'Т' => script('T'),
        'Х' => script('X'),
        'У' | 'Ү' => script('Y'),
        'І' | 'Ӏ' => script('I'),
        'Ј' => script('J'),
        'Ѕ' => script('S'),
        'Ԁ' => script('D'),
        'Ԛ' => script('Q'),
        'Ԝ' => script('W'),
        // Greek.
        'α' => script('a'),
        'ε' => script('e'),
        'ο' => script('o'),
        'ρ' => script('p'),
        'ι' => script('i'),
        'κ' => script('k'),
        'ν' => script('v'),
        'υ' => script('u'),
        'χ' => script('x'),
        'γ' => script('y'),
        'ϲ' => script('c'),
        'ϳ' => script('j'),
        'Α' => script('A'),
        'Β' => script('B'),
        'Ε' => script('E'),
        'Ζ' => script('Z'),
        'Η' => script('H'),
        'Ι' => script('I'),
        'Κ' => script('K'),
        'Μ' => script('M'),
        'Ν' => script('N'),
        'Ο' => script('O'),
        'Ρ' => script('P'),
        'Τ' => script('T'),
        'Υ' => script('Y'),
        'Χ' => script('X'),
        'Ϲ' => script('C'),
        'Ϳ' => script('J'),
        // Armenian.
        'օ' => script('o'),
        'ս' => script('u'),
        'ց' => script('g'),
        'հ' => script('h'),
        'ո' => script('n'),
        _ => None,
    }
}

fn is_latin(c: char) -> bool {
    c.is_ascii_alphabetic()
        || (('\u{00C0}'..='\u{024F}').contains(&c) && c != '\u{00D7}' && c != '\u{00F7}')
}

/// Letters of another script with no Latin twin (`д`, `λ`, `日`…).
fn is_foreign(c: char) -> bool {
    c.is_alphabetic() && !is_latin(c) && fold_char(c).is_none()
}

/// Whether most letters of `text` are Latin (counting look-alikes as
/// neither): then a word spelled only with look-alikes is a disguise.
pub fn latin_dominant(text: &str) -> bool {
    let (mut latin, mut foreign) = (0usize, 0usize);
    for c in text.chars() {
        if is_latin(c) || matches!(fold_char(c), Some(Fold::Compat(_))) {
            latin += 1;
        } else if is_foreign(c) {
            foreign += 1;
        }
    }
    latin > foreign
}

fn in_word(c: char) -> bool {
    c.is_alphanumeric() || is_invisible(c)
}

/// Folds the look-alike letters of `text` (see the module documentation);
/// `latin_dominant` says whether the whole brief is mostly Latin (see
/// [`latin_dominant`]), which decides the words made only of look-alikes.
pub fn fold(text: &str, latin_dominant: bool) -> Folded {
    if text.is_ascii() {
        return Folded { text: text.to_owned(), words: Vec::new() };
    }
    let mut out = Folded { text: String::with_capacity(text.len()), words: Vec::new() };
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if !in_word(c) {
            out.text.push(c);
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let end = rest.find(|c: char| !in_word(c)).unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        let (mut latin, mut foreign, mut script) = (false, false, false);
        for c in word.chars() {
            match fold_char(c) {
                Some(Fold::Compat(_)) => latin = true,
                Some(Fold::Script(_)) => script = true,
                None if is_latin(c) => latin = true,
                None => foreign |= is_foreign(c),
            }
        }
        let fold_script = script && !foreign && (latin || latin_dominant);
        let read: String = word
            .chars()
            .filter(|c| !is_invisible(*c))
            .map(|c| match fold_char(c) {
                Some(Fold::Compat(l)) => l,
                Some(Fold::Script(l)) if fold_script => l,
                _ => c,
            })
            .collect();
        if read != word {
            out.words.push(FoldedWord { written: word.to_owned(), read: read.clone() });
        }
        out.text.push_str(&read);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(text: &str) -> String {
        fold(text, latin_dominant(text)).text
    }

    #[test]
    fn look_alikes_inside_latin_words_are_folded() {
        // Cyrillic Ѕ and е.
        assert_eq!(folded("\u{0405}\u{0435}nd 5 USDC"), "Send 5 USDC");
        // Greek ο and α in "translate"/"summarize".
        assert_eq!(folded("Summ\u{03B1}rize the rep\u{03BF}rt"), "Summarize the report");
        // A word of look-alikes only, in a Latin brief: "рау" is Cyrillic.
        assert_eq!(folded("\u{0440}\u{0430}\u{0443} Bob 5 USDC"), "pay Bob 5 USDC");
    }

    #[test]
    fn compatibility_forms_and_invisible_characters() {
        assert_eq!(folded("\u{FF53}\u{FF45}\u{FF4E}\u{FF44} 5 USDC"), "send 5 USDC");
        assert_eq!(folded("tr\u{200B}ansfer fu\u{00AD}nds"), "transfer funds");
        assert_eq!(folded("\u{1D42C}\u{1D41E}\u{1D427}\u{1D41D}"), "send", "bold math letters");
        assert_eq!(folded("\u{A731}\u{1D07}\u{0274}\u{1D05}"), "send", "small capitals");
    }

    #[test]
    fn other_languages_keep_their_letters() {
        let ru = "Переведи этот текст на английский";
        assert_eq!(folded(ru), ru);
        let el = "Μετάφρασε το κείμενο στα αγγλικά";
        assert_eq!(folded(el), el);
        assert!(!latin_dominant(ru));
        // A Russian word with a letter that has no Latin twin stays as is,
        // even in an English brief.
        assert_eq!(
            folded("Translate \u{0441}\u{043E}\u{0441}\u{043D}\u{0430} please"),
            "Translate сосна please"
        );
    }

    #[test]
    fn folded_words_are_reported() {
        let f = fold("Ѕеnd it", true);
        assert_eq!(f.words, vec![FoldedWord { written: "Ѕеnd".into(), read: "Send".into() }]);
        assert!(fold("plain ascii", true).words.is_empty());
    }
}
