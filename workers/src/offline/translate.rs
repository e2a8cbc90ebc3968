//! `translate`: word-by-word glossary translation, English to French or
//! Spanish.
//!
//! Honest about its limits: no reordering, agreement or conjugation, just a
//! built-in glossary of a few hundred common words. Punctuation, numbers and
//! spacing are kept; a translated word copies the case pattern of the source
//! word (`Hello` → `Bonjour`, `HELLO` → `BONJOUR`); words not in the glossary
//! are kept as they are and reported. The result is labelled
//! `"engine": "offline-glossary"` with the share of words translated.

use std::{collections::HashMap, sync::OnceLock};

use serde::Serialize;

use super::{TaskInput, WorkerError, is_zero, text};

/// A target language of the glossary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Language {
    /// French.
    #[serde(rename = "fr")]
    French,
    /// Spanish.
    #[serde(rename = "es")]
    Spanish,
}

impl Language {
    /// Reads the target language from a spec: "French", "français", "to fr",
    /// "Spanish", "español", "to es", ... (the first one named wins).
    pub fn from_spec(spec: &str) -> Option<Self> {
        let words = text::words(spec);
        let named = |w: &str| match w {
            "french" | "français" | "francais" => Some(Self::French),
            "spanish" | "español" | "espanol" | "castilian" => Some(Self::Spanish),
            _ => None,
        };
        let coded = |pair: &[String]| match (pair[0].as_str(), pair[1].as_str()) {
            ("to" | "into" | "en", "fr") => Some(Self::French),
            ("to" | "into" | "en", "es") => Some(Self::Spanish),
            _ => None,
        };
        words
            .iter()
            .enumerate()
            .find_map(|(i, w)| named(w).or_else(|| words.get(i..i + 2).and_then(coded)))
    }
}

/// Result of `translate`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Translation {
    /// Always `"offline-glossary"`.
    pub engine: &'static str,
    /// Always `"en"`.
    pub source_language: &'static str,
    /// The target language.
    pub target_language: Language,
    /// The translated text.
    pub text: String,
    /// Words in the material.
    pub word_count: usize,
    /// Words found in the glossary.
    pub translated_count: usize,
    /// Words kept untranslated, lowercase, each once, in order of appearance.
    pub unknown_words: Vec<String>,
    /// `translated_count / word_count`, rounded to three decimals.
    pub coverage: f64,
    /// Sentences of the material dropped as instructions aimed at agents or
    /// the judge (their text is not repeated); omitted from JSON when none.
    #[serde(skip_serializing_if = "is_zero")]
    pub withheld_sentences: usize,
}

/// Translates the task material into the language named in the spec.
pub fn translate(input: &TaskInput<'_>) -> Result<Translation, WorkerError> {
    let target = Language::from_spec(input.spec).ok_or(WorkerError::MissingTargetLanguage)?;
    let material = input.material_for("translate")?;
    if material.text.trim().is_empty() {
        return Err(WorkerError::EmptyMaterial { capability: "translate" });
    }
    let glossary = glossary();
    let mut out = String::with_capacity(material.text.len());
    let (mut word_count, mut translated_count) = (0, 0);
    let mut unknown_words: Vec<String> = Vec::new();

    for token in tokens(&material.text) {
        let Token::Word(word) = token else {
            if let Token::Other(other) = token {
                out.push_str(other);
            }
            continue;
        };
        word_count += 1;
        let lower = word.to_lowercase();
        match glossary.get(lower.as_str()) {
            Some(&(fr, es)) => {
                translated_count += 1;
                out.push_str(&match_case(word, if target == Language::French { fr } else { es }));
            }
            None => {
                out.push_str(word);
                if !unknown_words.contains(&lower) {
                    unknown_words.push(lower);
                }
            }
        }
    }
    let coverage = if word_count == 0 {
        0.0
    } else {
        text::round3(translated_count as f64 / word_count as f64)
    };
    Ok(Translation {
        engine: "offline-glossary",
        source_language: "en",
        target_language: target,
        text: out,
        word_count,
        translated_count,
        unknown_words,
        coverage,
        withheld_sentences: material.withheld.len(),
    })
}

enum Token<'a> {
    /// Letters, with inner apostrophes or hyphens.
    Word(&'a str),
    /// Anything else, copied through.
    Other(&'a str),
}

fn tokens(text: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_word = false;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(at, c)) in chars.iter().enumerate() {
        let joiner = matches!(c, '\'' | '’' | '-')
            && in_word
            && chars.get(k + 1).is_some_and(|&(_, n)| n.is_alphanumeric());
        let is_word = c.is_alphanumeric() || joiner;
        if is_word != in_word && at > start {
            let piece = &text[start..at];
            out.push(classify(piece, in_word));
            start = at;
        }
        in_word = is_word;
    }
    if start < text.len() {
        let piece = &text[start..];
        out.push(classify(piece, in_word));
    }
    out
}

/// A run of letters is a word; a run with digits in it (`9am`, `v2`) is kept
/// as it is, like punctuation.
fn classify(piece: &str, in_word: bool) -> Token<'_> {
    if in_word && !piece.chars().any(|c| c.is_numeric()) {
        Token::Word(piece)
    } else {
        Token::Other(piece)
    }
}

/// `translation` with the case pattern of `source`: all caps (two or more
/// letters), capitalized, or lowercase.
fn match_case(source: &str, translation: &str) -> String {
    let letters: Vec<char> = source.chars().filter(|c| c.is_alphabetic()).collect();
    if letters.len() > 1 && letters.iter().all(|c| c.is_uppercase()) {
        return translation.to_uppercase();
    }
    if source.chars().next().is_some_and(char::is_uppercase) {
        let mut chars = translation.chars();
        return match chars.next() {
            Some(first) => first.to_uppercase().chain(chars).collect(),
            None => String::new(),
        };
    }
    translation.to_owned()
}

fn glossary() -> &'static HashMap<&'static str, (&'static str, &'static str)> {
    static GLOSSARY: OnceLock<HashMap<&'static str, (&'static str, &'static str)>> =
        OnceLock::new();
    GLOSSARY.get_or_init(|| {
        GLOSSARY_TABLE
            .lines()
            .filter_map(|line| {
                let mut parts = line.trim().split('|');
                Some((parts.next()?, (parts.next()?, parts.next()?)))
            })
            .collect()
    })
}

/// `english|french|spanish`, one entry a line.
const GLOSSARY_TABLE: &str = "\
the|le|el
a|un|un
an|un|un
and|et|y
or|ou|o
but|mais|pero
not|pas|no
no|non|no
yes|oui|sí
of|de|de
to|à|a
in|dans|en
on|sur|en
at|à|en
for|pour|para
with|avec|con
without|sans|sin
from|de|de
by|par|por
about|sur|sobre
as|comme|como
if|si|si
then|alors|entonces
because|parce que|porque
when|quand|cuando
where|où|donde
why|pourquoi|por qué
how|comment|cómo
what|quoi|qué
who|qui|quién
which|lequel|cual
this|ce|este
that|cela|eso
these|ces|estos
those|ceux|esos
here|ici|aquí
there|là|allí
all|tout|todo
some|quelques|algunos
many|beaucoup|muchos
much|beaucoup|mucho
more|plus|más
less|moins|menos
very|très|muy
too|trop|demasiado
also|aussi|también
only|seulement|solo
always|toujours|siempre
never|jamais|nunca
often|souvent|a menudo
now|maintenant|ahora
today|aujourd'hui|hoy
tomorrow|demain|mañana
yesterday|hier|ayer
again|encore|otra vez
soon|bientôt|pronto
late|tard|tarde
early|tôt|temprano
i|je|yo
you|vous|usted
he|il|él
she|elle|ella
it|il|eso
we|nous|nosotros
they|ils|ellos
me|moi|me
him|lui|él
her|elle|ella
us|nous|nos
them|eux|ellos
my|mon|mi
your|votre|su
his|son|su
its|son|su
our|notre|nuestro
their|leur|su
is|est|es
are|sont|son
was|était|era
were|étaient|eran
be|être|ser
been|été|sido
am|suis|soy
have|avoir|tener
has|a|tiene
had|avait|tenía
do|faire|hacer
does|fait|hace
did|fit|hizo
will|va|va
can|peut|puede
could|pourrait|podría
should|devrait|debería
would|voudrait|querría
must|doit|debe
go|aller|ir
goes|va|va
went|alla|fue
come|venir|venir
comes|vient|viene
see|voir|ver
sees|voit|ve
look|regarder|mirar
know|savoir|saber
think|penser|pensar
want|vouloir|querer
need|besoin|necesitar
like|aimer|gustar
love|aimer|amar
make|faire|hacer
take|prendre|tomar
give|donner|dar
get|obtenir|obtener
find|trouver|encontrar
say|dire|decir
says|dit|dice
said|dit|dijo
tell|dire|decir
ask|demander|preguntar
use|utiliser|usar
work|travail|trabajo
works|travaille|trabaja
worked|travaillé|trabajó
help|aide|ayuda
pay|payer|pagar
paid|payé|pagado
buy|acheter|comprar
sell|vendre|vender
send|envoyer|enviar
read|lire|leer
write|écrire|escribir
speak|parler|hablar
eat|manger|comer
drink|boire|beber
sleep|dormir|dormir
live|vivre|vivir
open|ouvrir|abrir
close|fermer|cerrar
start|commencer|empezar
stop|arrêter|parar
run|courir|correr
walk|marcher|caminar
play|jouer|jugar
call|appeler|llamar
wait|attendre|esperar
deliver|livrer|entregar
delivered|livré|entregado
accept|accepter|aceptar
accepted|accepté|aceptado
good|bon|bueno
bad|mauvais|malo
great|grand|gran
big|grand|grande
small|petit|pequeño
little|petit|pequeño
new|nouveau|nuevo
old|vieux|viejo
young|jeune|joven
long|long|largo
short|court|corto
high|haut|alto
low|bas|bajo
fast|rapide|rápido
slow|lent|lento
easy|facile|fácil
hard|difficile|difícil
important|important|importante
beautiful|beau|hermoso
happy|heureux|feliz
sad|triste|triste
free|gratuit|gratis
full|plein|lleno
empty|vide|vacío
first|premier|primero
last|dernier|último
next|prochain|próximo
other|autre|otro
same|même|mismo
different|différent|diferente
true|vrai|verdadero
false|faux|falso
right|droite|derecha
left|gauche|izquierda
hot|chaud|caliente
cold|froid|frío
black|noir|negro
white|blanc|blanco
red|rouge|rojo
blue|bleu|azul
green|vert|verde
yellow|jaune|amarillo
man|homme|hombre
woman|femme|mujer
child|enfant|niño
children|enfants|niños
people|gens|gente
friend|ami|amigo
family|famille|familia
mother|mère|madre
father|père|padre
house|maison|casa
home|maison|casa
city|ville|ciudad
country|pays|país
world|monde|mundo
street|rue|calle
school|école|escuela
office|bureau|oficina
company|entreprise|empresa
market|marché|mercado
bank|banque|banco
money|argent|dinero
price|prix|precio
cost|coût|costo
payment|paiement|pago
contract|contrat|contrato
agent|agent|agente
agents|agents|agentes
task|tâche|tarea
tasks|tâches|tareas
result|résultat|resultado
report|rapport|informe
team|équipe|equipo
customer|client|cliente
user|utilisateur|usuario
service|service|servicio
product|produit|producto
data|données|datos
system|système|sistema
computer|ordinateur|computadora
phone|téléphone|teléfono
book|livre|libro
letter|lettre|carta
word|mot|palabra
words|mots|palabras
language|langue|idioma
question|question|pregunta
answer|réponse|respuesta
problem|problème|problema
idea|idée|idea
thing|chose|cosa
things|choses|cosas
way|chemin|camino
time|temps|tiempo
day|jour|día
days|jours|días
week|semaine|semana
month|mois|mes
year|année|año
years|ans|años
hour|heure|hora
minute|minute|minuto
morning|matin|mañana
evening|soir|tarde
night|nuit|noche
water|eau|agua
food|nourriture|comida
bread|pain|pan
coffee|café|café
tea|thé|té
wine|vin|vino
cat|chat|gato
dog|chien|perro
bird|oiseau|pájaro
tree|arbre|árbol
sun|soleil|sol
moon|lune|luna
sea|mer|mar
car|voiture|coche
train|train|tren
door|porte|puerta
window|fenêtre|ventana
table|table|mesa
name|nom|nombre
life|vie|vida
hello|bonjour|hola
goodbye|au revoir|adiós
please|s'il vous plaît|por favor
thanks|merci|gracias
thank|merci|gracias
sorry|désolé|lo siento
one|un|uno
two|deux|dos
three|trois|tres
four|quatre|cuatro
five|cinq|cinco
six|six|seis
seven|sept|siete
eight|huit|ocho
nine|neuf|nueve
ten|dix|diez
brother|frère|hermano
sister|sœur|hermana
boy|garçon|chico
girl|fille|chica
room|chambre|habitación
kitchen|cuisine|cocina
garden|jardin|jardín
river|rivière|río
mountain|montagne|montaña
road|route|carretera
shop|magasin|tienda
store|magasin|tienda
music|musique|música
news|nouvelles|noticias
story|histoire|historia
game|jeu|juego
job|emploi|empleo
meeting|réunion|reunión
email|courriel|correo
list|liste|lista
summary|résumé|resumen
number|nombre|número
part|partie|parte
place|lieu|lugar
hand|main|mano
head|tête|cabeza
eye|œil|ojo
heart|cœur|corazón
hundred|cent|cien
thousand|mille|mil
";

#[cfg(test)]
mod tests {
    use super::*;

    fn run(spec: &str, source: &str) -> Translation {
        translate(&TaskInput::new(spec).with_source(source)).unwrap()
    }

    #[test]
    fn translates_to_french_preserving_case_and_punctuation() {
        let t = run("Translate to French", "Hello, my friend! The cat is black.");
        assert_eq!(t.text, "Bonjour, mon ami! Le chat est noir.");
        assert_eq!(t.target_language, Language::French);
        assert_eq!((t.word_count, t.translated_count), (7, 7));
        assert_eq!(t.coverage, 1.0);
        assert!(t.unknown_words.is_empty());
    }

    #[test]
    fn translates_to_spanish_and_counts_unknown_words() {
        let t = run(
            "Please translate this into Spanish.",
            "The agent delivered the report to Alice at 9am. Alice said THANKS, thanks!",
        );
        assert_eq!(
            t.text,
            "El agente entregado el informe a Alice en 9am. Alice dijo GRACIAS, gracias!"
        );
        assert_eq!(t.word_count, 12);
        assert_eq!(t.translated_count, 10);
        assert_eq!(t.unknown_words, ["alice"]);
        assert_eq!(t.coverage, 0.833);
    }

    #[test]
    fn glossary_is_a_few_hundred_words_with_both_languages() {
        assert!(glossary().len() >= 300, "{}", glossary().len());
        assert!(glossary().values().all(|(fr, es)| !fr.is_empty() && !es.is_empty()));
    }

    #[test]
    fn reads_the_target_language() {
        assert_eq!(Language::from_spec("Translate into français"), Some(Language::French));
        assert_eq!(Language::from_spec("translate to es"), Some(Language::Spanish));
        assert_eq!(Language::from_spec("Translate to German"), None);
        let e = translate(&TaskInput::new("Translate to German: hi")).unwrap_err();
        assert_eq!(e, WorkerError::MissingTargetLanguage);
    }

    #[test]
    fn output_json_is_labelled() {
        let t = run("to French", "Good morning, Zoë");
        assert_eq!(t.text, "Bon matin, Zoë");
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["engine"], "offline-glossary");
        assert_eq!(json["target_language"], "fr");
        assert_eq!(json["coverage"], 0.667);
        assert_eq!(json["unknown_words"], serde_json::json!(["zoë"]));
    }

    #[test]
    fn empty_material_is_an_error() {
        let e = translate(&TaskInput::new("Translate to French:").with_source("")).unwrap_err();
        assert_eq!(e, WorkerError::EmptyMaterial { capability: "translate" });
    }
}
