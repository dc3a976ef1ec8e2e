//! Small steps the tests take on a [`TestClient`] again and again.

use agent_client_protocol::v1::schema::CancelNotification;
use serde_json::Value;

use super::{PermissionPolicy, TestClient};

impl TestClient {
    /// Sets how the client answers the next `session/request_permission`s.
    pub fn set_policy(&self, policy: PermissionPolicy) {
        *self.policy.lock().unwrap() = policy;
    }

    /// Sends `session/cancel` for `session_id`.
    pub fn cancel(&self, session_id: &str) {
        self.cx
            .send_notification(CancelNotification::new(session_id.to_owned()))
            .unwrap();
    }

    /// Every `session/request_permission` the client has seen so far.
    pub fn permission_requests(&self) -> Vec<&Value> {
        self.seen
            .iter()
            .filter(|m| m["request"] == "session/request_permission")
            .collect()
    }
}
