//! An HTTPS listener's filter chain: the SNI that selects it (its
//! hostname) and the Secrets it terminates TLS with (`tls.certificateRefs`,
//! `kubernetes.io/tls` Secrets of the input). A Secret that is missing or
//! malformed leaves that listener out with an error naming it; the other
//! listeners are still rendered (docs/envoy.md, "HTTPS listeners").

use std::collections::BTreeMap;

use attache_core::topology::ListenerInfo;

use crate::backends::AddressBook;
use crate::chains::ChainTls;
use crate::error::ListenerTlsError;
use crate::sds::secret_name;
use crate::secrets::TlsSecret;

/// The chain's TLS, recording the Secrets it uses in `used`; or why the
/// listener cannot be served.
pub fn chain_tls(
    listener: &ListenerInfo,
    book: &AddressBook,
    used: &mut BTreeMap<String, TlsSecret>,
) -> Result<ChainTls, ListenerTlsError> {
    let refs = listener
        .tls
        .as_ref()
        .map(|t| t.certificate_refs.as_slice())
        .unwrap_or_default();
    if refs.is_empty() {
        return Err(ListenerTlsError::NoCertificate {
            listener: listener.name.clone(),
        });
    }
    let mut secrets = Vec::new();
    for (i, key) in refs.iter().enumerate() {
        let secret = match book.manifests.secrets.get(key) {
            Some(Ok(secret)) => secret,
            Some(Err(source)) => {
                return Err(ListenerTlsError::BadSecret {
                    listener: listener.name.clone(),
                    source: source.clone(),
                })
            }
            None => {
                return Err(ListenerTlsError::MissingSecret {
                    listener: listener.name.clone(),
                    index: i,
                    secret: key.to_string(),
                })
            }
        };
        let name = secret_name(secret);
        used.insert(name.clone(), secret.clone());
        secrets.push(name);
    }
    Ok(ChainTls {
        server_names: listener.hostname.iter().cloned().collect(),
        secrets,
    })
}
