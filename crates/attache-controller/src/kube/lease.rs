//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's
//! leaderelection does it: the holder renews `renewTime` every few seconds;
//! a replica takes the Lease over once it has not been renewed for
//! `leaseDurationSeconds`. Every write carries the resourceVersion it read,
//! so two replicas racing for it cannot both win (one gets 409).
//! The decision is pure ([`decide`]); [`LeaseLock::try_acquire`] does the I/O.

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::PostParams;
use kube::{Api, Client};

/// What to do with the Lease as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No Lease yet: create it holding it.
    Create,
    /// We hold it: renew.
    Renew,
    /// Its holder stopped renewing (or released it): take it over.
    TakeOver,
    /// Someone else holds it.
    Follow(String),
}

pub fn decide(spec: Option<&LeaseSpec>, me: &str, now: Timestamp) -> Decision {
    let Some(spec) = spec else {
        return Decision::Create;
    };
    let holder = spec.holder_identity.as_deref().unwrap_or_default();
    if holder == me {
        return Decision::Renew;
    }
    if holder.is_empty() {
        return Decision::TakeOver;
    }
    let duration = SignedDuration::from_secs(i64::from(spec.lease_duration_seconds.unwrap_or(15)));
    let renewed = spec.renew_time.as_ref().map(|t| t.0);
    match renewed {
        Some(at) if at + duration > now => Decision::Follow(holder.to_string()),
        _ => Decision::TakeOver,
    }
}

pub struct LeaseLock {
    pub api: Api<Lease>,
    pub name: String,
    pub identity: String,
    pub duration_seconds: i32,
}

impl LeaseLock {
    pub fn new(client: Client, namespace: &str, name: &str, identity: &str) -> Self {
        LeaseLock {
            api: Api::namespaced(client, namespace),
            name: name.into(),
            identity: identity.into(),
            duration_seconds: 15,
        }
    }

    /// One round: reads the Lease and creates, renews or takes it over when
    /// it may. Ok(true) when we hold it afterwards. A 409 (another replica
    /// wrote first) is Ok(false), not an error.
    pub async fn try_acquire(&self, now: Timestamp) -> Result<bool, kube::Error> {
        let current = self.api.get_opt(&self.name).await?;
        let decision = decide(
            current.as_ref().and_then(|l| l.spec.as_ref()),
            &self.identity,
            now,
        );
        let mut lease = current.unwrap_or_else(|| Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                ..ObjectMeta::default()
            },
            spec: None,
        });
        let mut spec = lease.spec.take().unwrap_or_default();
        match &decision {
            Decision::Follow(_) => return Ok(false),
            Decision::Renew => {}
            Decision::Create | Decision::TakeOver => {
                spec.holder_identity = Some(self.identity.clone());
                spec.acquire_time = Some(MicroTime(now));
                spec.lease_transitions = Some(
                    spec.lease_transitions.unwrap_or(0) + i32::from(decision == Decision::TakeOver),
                );
            }
        }
        spec.renew_time = Some(MicroTime(now));
        spec.lease_duration_seconds = Some(self.duration_seconds);
        lease.spec = Some(spec);
        let written = if decision == Decision::Create {
            self.api.create(&PostParams::default(), &lease).await
        } else {
            self.api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
        };
        match written {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// On shutdown: hand the Lease over at once (holder cleared) instead of
    /// making the other replica wait for it to expire.
    pub async fn release(&self) -> Result<(), kube::Error> {
        let Some(mut lease) = self.api.get_opt(&self.name).await? else {
            return Ok(());
        };
        let Some(spec) = lease.spec.as_mut() else {
            return Ok(());
        };
        if spec.holder_identity.as_deref() != Some(&self.identity) {
            return Ok(());
        }
        spec.holder_identity = None;
        self.api
            .replace(&self.name, &PostParams::default(), &lease)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: &str, renewed: &str) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.into()),
            renew_time: Some(MicroTime(renewed.parse().unwrap())),
            lease_duration_seconds: Some(15),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn the_lease_is_taken_over_only_once_it_expired() {
        let now: Timestamp = "2026-11-26T07:00:20Z".parse().unwrap();
        assert_eq!(decide(None, "a", now), Decision::Create);
        assert_eq!(
            decide(Some(&spec("a", "2026-11-26T07:00:00Z")), "a", now),
            Decision::Renew
        );
        assert_eq!(
            decide(Some(&spec("b", "2026-11-26T07:00:10Z")), "a", now),
            Decision::Follow("b".into())
        );
        assert_eq!(
            decide(Some(&spec("b", "2026-11-26T07:00:04Z")), "a", now),
            Decision::TakeOver
        );
        assert_eq!(
            decide(Some(&spec("", "2026-11-26T07:00:19Z")), "a", now),
            Decision::TakeOver
        );
    }
}
