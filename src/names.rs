//! Closed sets of names: declared once, with [`closed_set!`], as a fieldless enum whose
//! variants carry the report's name for them. The same declaration gives the list of
//! names (`ALL`), the name of each (`as_str`, `Display`), its serialization (the name as a
//! JSON string) and its JSON Schema (a string `enum` of the names, under the enum's own
//! name in `$defs`), so the schema and the output cannot disagree.

/// Declares a closed set of names: `closed_set! { /// doc; pub enum Name { Variant =
/// "name", ... } }`.
macro_rules! closed_set {
    (
        $(#[$meta:meta])*
        pub enum $set:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $name:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $set {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $set {
            /// Every member, in the order declared.
            pub const ALL: &'static [Self] = &[ $( Self::$variant ),+ ];

            /// The report's name for it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $name ),+
                }
            }

            /// The name as words, for people: `_` as a space.
            #[allow(dead_code)]
            pub fn words(self) -> String {
                self.as_str().replace('_', " ")
            }
        }

        impl ::std::fmt::Display for $set {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::serde::Serialize for $set {
            fn serialize<S: ::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl ::schemars::JsonSchema for $set {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($set).into()
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                let names: Vec<&str> = Self::ALL.iter().map(|m| m.as_str()).collect();
                ::schemars::json_schema!({ "type": "string", "enum": names })
            }
        }
    };
}
pub(crate) use closed_set;

#[cfg(test)]
mod tests {
    super::closed_set! {
        /// A test set.
        pub enum Colour {
            Red = "red",
            DarkBlue = "dark_blue",
        }
    }

    #[test]
    fn a_set_names_serializes_and_describes_its_members() {
        assert_eq!(Colour::ALL, [Colour::Red, Colour::DarkBlue]);
        assert_eq!(Colour::DarkBlue.to_string(), "dark_blue");
        assert_eq!(
            serde_json::to_string(&Colour::Red).unwrap(),
            "\"red\"".to_owned()
        );
        let schema = schemars::schema_for!(Colour);
        assert_eq!(
            schema.get("enum").unwrap(),
            &serde_json::json!(["red", "dark_blue"])
        );
    }
}
