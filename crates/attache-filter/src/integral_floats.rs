//! A serde `Deserializer` adapter that lets integer fields accept integral
//! doubles (`10000.0`, `1e4`), for Istio: a `WasmPlugin.pluginConfig` is a
//! protobuf `Struct`, whose numbers are all doubles by the time the filter
//! reads them.
//!
//! It wraps the JSON deserializer and every visitor, map, sequence and enum
//! access below it, so the typed `Document` is read in one pass straight
//! from the bytes. (A `serde_json::Value` tree first, rewritten and then
//! deserialised again, cost an allocation per JSON node: ~10x the parse time
//! at 10,000 routes.) A double that is integral and exactly representable is
//! handed on as an integer; anything else passes through unchanged, so a
//! field that wants an integer still refuses `1.5`.

use std::fmt;

use serde::de::{
    DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// Largest integer a double represents exactly; beyond it "integral" is
/// meaningless, so such numbers are left for the field to reject.
const MAX_EXACT_DOUBLE: f64 = 9_007_199_254_740_992.0;

/// Wraps a deserializer (usually `&mut serde_json::Deserializer`).
pub struct IntegralFloats<D>(pub D);

/// The integer an integral double stands for, if it is one.
enum Integral {
    Unsigned(u64),
    Signed(i64),
}

fn integral(f: f64) -> Option<Integral> {
    if f.fract() != 0.0 || f.abs() > MAX_EXACT_DOUBLE {
        return None;
    }
    // Exact by the bound above: the casts cannot truncate.
    Some(if f >= 0.0 {
        Integral::Unsigned(f as u64)
    } else {
        Integral::Signed(f as i64)
    })
}

struct Wrap<T>(T);

macro_rules! forward_plain {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            self.0.$method(Wrap(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for IntegralFloats<D> {
    type Error = D::Error;

    forward_plain! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier deserialize_ignored_any
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_unit_struct(name, Wrap(visitor))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_newtype_struct(name, Wrap(visitor))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple(len, Wrap(visitor))
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_tuple_struct(name, len, Wrap(visitor))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_struct(name, fields, Wrap(visitor))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, Wrap(visitor))
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident($ty:ty))*) => {$(
        fn $method<E: serde::de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.0.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.expecting(f)
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
        match integral(v) {
            Some(Integral::Unsigned(n)) => self.0.visit_u64(n),
            Some(Integral::Signed(n)) => self.0.visit_i64(n),
            None => self.0.visit_f64(v),
        }
    }

    forward_visit! {
        visit_bool(bool) visit_i64(i64) visit_i128(i128) visit_u64(u64) visit_u128(u128)
        visit_char(char) visit_str(&str) visit_borrowed_str(&'de str) visit_string(String)
        visit_bytes(&[u8]) visit_borrowed_bytes(&'de [u8]) visit_byte_buf(Vec<u8>)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_none()
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        self.0.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_some(IntegralFloats(d))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.visit_newtype_struct(IntegralFloats(d))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        self.0.visit_seq(Wrap(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        self.0.visit_map(Wrap(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Self::Value, A::Error> {
        self.0.visit_enum(Wrap(data))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrap<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(IntegralFloats(d))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0.next_element_seed(Wrap(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        self.0.next_key_seed(Wrap(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.0.next_value_seed(Wrap(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<A> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), Self::Error> {
        let (value, variant) = self.0.variant_seed(Wrap(seed))?;
        Ok((value, Wrap(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), Self::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, Self::Error> {
        self.0.newtype_variant_seed(Wrap(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.tuple_variant(len, Wrap(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.struct_variant(fields, Wrap(visitor))
    }
}

#[cfg(test)]
mod tests {
    use super::IntegralFloats;
    use serde::Deserialize;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Sample {
        count: u64,
        offset: i32,
        codes: Vec<u16>,
        maybe: Option<u32>,
        ratio: f64,
        label: String,
    }

    fn read<T: for<'de> Deserialize<'de>>(json: &str) -> Result<T, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(json);
        let value = T::deserialize(IntegralFloats(&mut de))?;
        de.end()?;
        Ok(value)
    }

    #[test]
    fn integral_doubles_reach_integer_fields_at_any_depth() {
        let s: Sample = read(
            r#"{"count":1e4,"offset":-2.0,"codes":[503.0,502],"maybe":7.0,"ratio":1.0,"label":"1.0"}"#,
        )
        .unwrap();
        assert_eq!(
            s,
            Sample {
                count: 10_000,
                offset: -2,
                codes: vec![503, 502],
                maybe: Some(7),
                ratio: 1.0,
                label: "1.0".into(),
            }
        );
    }

    #[test]
    fn fractions_and_inexact_doubles_are_still_refused() {
        let e = read::<Sample>(
            r#"{"count":1.5,"offset":0,"codes":[],"maybe":null,"ratio":0.5,"label":""}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("floating point `1.5`"), "{e}");
        assert!(read::<u64>("1e300").is_err());
        assert!(read::<u16>("70000.0").is_err());
    }
}
