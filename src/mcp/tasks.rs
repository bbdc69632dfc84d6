//! MCP tasks (the `io.modelcontextprotocol/tasks` extension, SPEC §16): a call the
//! client gets back at once as a task, run in a worker while the client asks after it.
//!
//! Owns the task records and where they live ([`Store`]: this server's memory, or
//! Redis shared by replicas), the run of one task (its call followed to its end: what
//! it asks the client becomes the task's `inputRequests`, answered by `tasks/update`;
//! its progress, the task's `statusMessage`), and `tasks/get`, `tasks/update`,
//! `tasks/cancel`. A task is run by the replica that created it (its owner), which
//! renews a lease on it while it runs; `tasks/update` and `tasks/cancel` reach the owner
//! through the task's inbox in the store, so any replica takes them. A task whose
//! owner's lease ran out (the replica died) is failed, saying so; a replica that stops
//! fails the tasks it runs.
//!
//! Must never: answer for a task another caller created (its id is the only way in,
//! and another caller, or the same with another profile, is told there is no such
//! task), or leave a task `working` that nobody runs.
//!
//! Every change of a task is published through the store (in-process in memory,
//! Redis pub/sub when shared), so the replica that holds a client's
//! `subscriptions/listen` stream naming the task (`taskIds`) tells it
//! (`notifications/tasks`), whichever replica runs the task.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::{CreateTaskResult, DetailedTask, GetTaskResult, InputResponses, Task, TaskPayload, TaskStatus};
use rmcp::model::{GetMeta, RequestId, ServerNotification, TaskStatusNotification};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, Peer, RoleServer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::{Notify, broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::call::{Event, Question, answered, input_key};
use super::host::{self, Able};
use crate::runtime::host_objects::{HostAnswer, HostRequest, Notice, refused};
use crate::runtime::{Cancel, Outcome, ToolResult};
use crate::sync;

/// The environment variable that names the store when the config names none.
pub const STORE_VARIABLE: &str = "LCP_TASK_STORE";

/// How long a task can be asked after, from its last change (`ttlMs`).
const TTL: Duration = Duration::from_secs(3600);
/// How often a client is told to ask (`pollIntervalMs`).
const POLL_INTERVAL: Duration = Duration::from_millis(250);
/// How long an owner's claim on a running task holds without being renewed.
const LEASE: Duration = Duration::from_secs(10);
/// How often an owner renews its claim.
const RENEW_EVERY: Duration = Duration::from_secs(2);
/// How often an owner looks in a shared store's inbox (another replica's update).
const INBOX_EVERY: Duration = Duration::from_millis(100);
/// The Redis channel every replica publishes its tasks' changes on.
const CHANGES_CHANNEL: &str = "lcp:tasks:changes";
/// How long a listen stream waits for the Redis subscription before telling what it has.
const HEARING_WITHIN: Duration = Duration::from_secs(5);

/// A task as the store keeps it: the wire fields of `tasks/get`, and lcp's own.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Record {
    task_id: String,
    status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status_message: Option<String>,
    created_at: String,
    last_updated_at: String,
    ttl_ms: u64,
    poll_interval_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input_requests: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
    /// The replica that runs it.
    owner: String,
    /// Until when the owner's claim holds (milliseconds since the epoch).
    lease_until_ms: u64,
    /// The tool called.
    tool: String,
    /// The caller that created it, with its profile (`auth::Caller::key`): the only
    /// one that sees it. A record without one (written before callers were kept) is
    /// nobody's.
    #[serde(default)]
    caller: Option<String>,
}

impl Record {
    fn touch(&mut self) {
        self.last_updated_at = timestamp(SystemTime::now());
    }

    fn task(&self) -> Task {
        let mut task = Task::new(&self.task_id, self.status, &self.created_at, &self.last_updated_at)
            .with_ttl_ms(self.ttl_ms)
            .with_poll_interval_ms(self.poll_interval_ms);
        if let Some(message) = &self.status_message {
            task = task.with_status_message(message);
        }
        task
    }

    fn detailed(&self) -> DetailedTask {
        let object = |value: &Option<Value>| value.as_ref().and_then(Value::as_object).cloned().unwrap_or_default();
        let payload = match self.status {
            TaskStatus::InputRequired => TaskPayload::InputRequired {
                input_requests: self
                    .input_requests
                    .clone()
                    .and_then(|requests| serde_json::from_value(requests).ok())
                    .unwrap_or_default(),
            },
            TaskStatus::Completed => TaskPayload::Completed { result: object(&self.result) },
            TaskStatus::Failed => TaskPayload::Failed { error: object(&self.error) },
            TaskStatus::Cancelled => TaskPayload::Cancelled,
            _ => TaskPayload::Working,
        };
        DetailedTask::new(self.task(), payload)
    }

    /// Failed with `message` as a JSON-RPC error (no `result`).
    fn fail(&mut self, message: String) {
        self.status = TaskStatus::Failed;
        self.error = Some(json!({ "code": rmcp::model::ErrorCode::INTERNAL_ERROR.0, "message": message }));
        self.result = None;
        self.input_requests = None;
        self.status_message = None;
        self.touch();
    }

    /// The owner's claim ran out: nobody runs it any more.
    fn orphaned(&self) -> bool {
        !self.status.is_terminal() && self.lease_until_ms < now_ms()
    }
}

/// What reaches a task's owner from `tasks/update` and `tasks/cancel`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
enum Message {
    Responses(InputResponses),
    Cancel,
}

/// Where task records live.
enum Store {
    Memory(Mutex<Memory>),
    Redis(Redis),
}

#[derive(Default)]
struct Memory {
    records: HashMap<String, (Record, std::time::Instant)>,
    inboxes: HashMap<String, Vec<Message>>,
}

struct Redis {
    client: redis::Client,
    connection: tokio::sync::Mutex<Option<redis::aio::MultiplexedConnection>>,
}

impl Redis {
    /// Runs `command`, connecting (again) when there is no connection or it broke.
    async fn run<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> Result<T, String> {
        let mut connection = self.connection.lock().await;
        for attempt in 0..2 {
            if connection.is_none() {
                match self.client.get_multiplexed_async_connection().await {
                    Ok(made) => *connection = Some(made),
                    Err(err) if attempt == 1 => return Err(format!("the task store cannot be reached: {err}")),
                    Err(_) => continue,
                }
            }
            let Some(live) = connection.as_mut() else { continue };
            match command.query_async(live).await {
                Ok(value) => return Ok(value),
                Err(err) if err.is_io_error() || err.is_connection_dropped() => *connection = None,
                Err(err) => return Err(format!("the task store refused a command: {err}")),
            }
        }
        Err("the task store cannot be reached".to_string())
    }
}

fn record_key(id: &str) -> String {
    format!("lcp:task:{id}")
}

fn inbox_key(id: &str) -> String {
    format!("lcp:task:{id}:inbox")
}

impl Store {
    /// Writes `record`; it lives [`TTL`] from now.
    async fn put(&self, record: &Record) -> Result<(), String> {
        match self {
            Store::Memory(memory) => {
                let now = std::time::Instant::now();
                let mut memory = sync::lock(memory);
                if !memory.records.contains_key(&record.task_id) {
                    // A new task: those nobody asked after within their time go.
                    memory.records.retain(|_, (_, expires)| *expires > now);
                    let Memory { records, inboxes } = &mut *memory;
                    inboxes.retain(|id, _| records.contains_key(id));
                }
                memory.records.insert(record.task_id.clone(), (record.clone(), now + TTL));
                Ok(())
            }
            Store::Redis(redis) => {
                let text = serde_json::to_string(record).map_err(|err| err.to_string())?;
                let mut command = redis::cmd("SET");
                command.arg(record_key(&record.task_id)).arg(text).arg("PX").arg(TTL.as_millis() as u64);
                redis.run::<()>(&command).await
            }
        }
    }

    async fn get(&self, id: &str) -> Result<Option<Record>, String> {
        match self {
            Store::Memory(memory) => {
                let mut memory = sync::lock(memory);
                let expired = memory.records.get(id).is_some_and(|(_, expires)| *expires < std::time::Instant::now());
                if expired {
                    memory.records.remove(id);
                    memory.inboxes.remove(id);
                }
                Ok(memory.records.get(id).map(|(record, _)| record.clone()))
            }
            Store::Redis(redis) => {
                let mut command = redis::cmd("GET");
                command.arg(record_key(id));
                let text: Option<String> = redis.run(&command).await?;
                Ok(text.and_then(|text| serde_json::from_str(&text).ok()))
            }
        }
    }

    /// Leaves `message` for the task's owner.
    async fn send(&self, id: &str, message: Message) -> Result<(), String> {
        match self {
            Store::Memory(memory) => {
                sync::lock(memory).inboxes.entry(id.to_string()).or_default().push(message);
                Ok(())
            }
            Store::Redis(redis) => {
                let text = serde_json::to_string(&message).map_err(|err| err.to_string())?;
                let mut push = redis::cmd("RPUSH");
                push.arg(inbox_key(id)).arg(text);
                redis.run::<()>(&push).await?;
                let mut expire = redis::cmd("PEXPIRE");
                expire.arg(inbox_key(id)).arg(TTL.as_millis() as u64);
                redis.run::<()>(&expire).await
            }
        }
    }

    /// The messages left for the task's owner since it last looked.
    async fn receive(&self, id: &str) -> Result<Vec<Message>, String> {
        match self {
            Store::Memory(memory) => Ok(sync::lock(memory).inboxes.remove(id).unwrap_or_default()),
            Store::Redis(redis) => {
                let mut command = redis::cmd("LPOP");
                command.arg(inbox_key(id)).arg(64);
                let texts: Option<Vec<String>> = redis.run(&command).await?;
                Ok(texts.into_iter().flatten().filter_map(|text| serde_json::from_str(&text).ok()).collect())
            }
        }
    }
}

/// A task this replica runs: woken when a message is left for it here.
struct Running {
    wake: Arc<Notify>,
}

/// The server's tasks.
pub(super) struct Tasks {
    store: Store,
    /// This replica's name in the records it owns.
    replica: String,
    running: Mutex<HashMap<String, Running>>,
    /// Every task's changes, as this replica hears of them (its own, and with a shared
    /// store those every replica publishes).
    changes: broadcast::Sender<Arc<Record>>,
    /// Started once a listen stream here names a task: this replica's subscription to
    /// the shared store's changes.
    hearing: tokio::sync::OnceCell<()>,
}

/// The task ids a `subscriptions/listen` request's filter names (`taskIds`, the tasks
/// extension's part of the filter), put in the request's head by the HTTP transport.
#[derive(Debug, Clone)]
pub(super) struct ListenedTasks(pub Vec<String>);

impl ListenedTasks {
    /// The `taskIds` of `body` when it is a `subscriptions/listen` request naming some.
    pub(super) fn of(body: &[u8]) -> Option<ListenedTasks> {
        memchr::memmem::find(body, b"subscriptions/listen")?;
        let message: Value = serde_json::from_slice(body).ok()?;
        if message["method"] != "subscriptions/listen" {
            return None;
        }
        let ids: Vec<String> = message["params"]["notifications"]["taskIds"]
            .as_array()?
            .iter()
            .filter_map(|id| id.as_str().map(str::to_string))
            .collect();
        (!ids.is_empty()).then_some(ListenedTasks(ids))
    }
}

impl Tasks {
    /// The tasks of `configured` (`[mcp] task_store`), else of `$LCP_TASK_STORE`, else
    /// of this server's memory.
    pub(super) fn new(configured: Option<&str>) -> Result<Tasks, String> {
        let url = configured.map(str::to_string).or_else(|| std::env::var(STORE_VARIABLE).ok());
        let store = match url.as_deref().map(str::trim).filter(|url| !url.is_empty()) {
            None => Store::Memory(Mutex::default()),
            Some(url) => {
                let client = redis::Client::open(url)
                    .map_err(|err| format!("the task store ([mcp] task_store or ${STORE_VARIABLE}): {err}"))?;
                Store::Redis(Redis { client, connection: tokio::sync::Mutex::new(None) })
            }
        };
        let replica = super::state::random_bytes()
            .map(|bytes| bytes[..8].iter().map(|byte| format!("{byte:02x}")).collect())
            .ok_or("the system has no randomness to offer")?;
        let (changes, _) = broadcast::channel(256);
        Ok(Tasks { store, replica, running: Mutex::default(), changes, hearing: tokio::sync::OnceCell::new() })
    }

    /// Whether the tasks live where other replicas see them.
    fn shared(&self) -> bool {
        matches!(self.store, Store::Redis(_))
    }

    /// Records a new task of `tool` (durably: `tasks/get` finds it once this returns)
    /// and runs `call` as it: what the call reports comes through `events`.
    pub(super) async fn create(
        self: &Arc<Self>,
        tool: &str,
        caller: String,
        run: TaskRun,
    ) -> Result<CreateTaskResult, ErrorData> {
        let id = format!("task-{}", super::call::unguessable().ok_or_else(|| internal("no randomness"))?);
        let now = timestamp(SystemTime::now());
        let record = Record {
            task_id: id.clone(),
            status: TaskStatus::Working,
            status_message: run.status.clone(),
            created_at: now.clone(),
            last_updated_at: now,
            ttl_ms: TTL.as_millis() as u64,
            poll_interval_ms: POLL_INTERVAL.as_millis() as u64,
            input_requests: None,
            result: None,
            error: None,
            owner: self.replica.clone(),
            lease_until_ms: now_ms() + LEASE.as_millis() as u64,
            tool: tool.to_string(),
            caller: Some(caller),
        };
        if let Err(err) = self.store.put(&record).await {
            run.cancel.cancel();
            super::call::drain(run.events);
            return Err(internal(&err));
        }
        let wake = Arc::new(Notify::new());
        sync::lock(&self.running).insert(id.clone(), Running { wake: Arc::clone(&wake) });
        let created = CreateTaskResult::new(record.task());
        let tasks = Arc::clone(self);
        tokio::spawn(async move {
            tasks.follow(record, run, wake).await;
            sync::lock(&tasks.running).remove(&id);
        });
        Ok(created)
    }

    /// `tasks/get`: the task as it is now.
    pub(super) async fn get(&self, id: &str, caller: &str) -> Result<GetTaskResult, ErrorData> {
        let mut record = self.find(id, caller).await?;
        if record.orphaned() {
            record.fail("the lcp serve replica that ran this task stopped before the task finished".to_string());
            self.save(&record).await.map_err(|err| internal(&err))?;
        }
        Ok(GetTaskResult::new(record.detailed()))
    }

    /// `tasks/update`: answers to the task's outstanding input requests. Answers to
    /// nothing it asks (a key it does not wait on, a task that ended) are acknowledged
    /// and left: the task as `tasks/get` shows it says what it still waits for. The
    /// acknowledgement comes once the task took the answers (at once on the replica
    /// that runs it, within [`INBOX_EVERY`] on another): a `tasks/get` right after it,
    /// on any replica, no longer shows the answered requests waiting.
    pub(super) async fn update(&self, id: &str, responses: InputResponses, caller: &str) -> Result<(), ErrorData> {
        let record = self.find(id, caller).await?;
        if record.status.is_terminal() {
            return Ok(());
        }
        let answered: Vec<String> = record
            .input_requests
            .iter()
            .filter_map(Value::as_object)
            .flat_map(|asked| asked.keys())
            .filter(|key| responses.contains_key(*key))
            .cloned()
            .collect();
        self.deliver(&record, Message::Responses(responses)).await?;
        let taken = |now: &Record| {
            now.status.is_terminal()
                || now.input_requests.as_ref().is_none_or(|asked| answered.iter().all(|key| asked.get(key).is_none()))
        };
        let deadline = tokio::time::Instant::now() + INBOX_EVERY * 10;
        while !answered.is_empty() && tokio::time::Instant::now() < deadline {
            match self.store.get(id).await {
                Ok(Some(now)) if !taken(&now) => tokio::time::sleep(Duration::from_millis(5)).await,
                _ => break,
            }
        }
        Ok(())
    }

    /// `tasks/cancel`: stops the task; one that ended already stays as it ended.
    pub(super) async fn cancel(&self, id: &str, caller: &str) -> Result<(), ErrorData> {
        let mut record = self.find(id, caller).await?;
        if record.status.is_terminal() {
            return Ok(());
        }
        if record.orphaned() {
            record.status = TaskStatus::Cancelled;
            record.input_requests = None;
            record.touch();
            return self.save(&record).await.map_err(|err| internal(&err));
        }
        self.deliver(&record, Message::Cancel).await
    }

    /// Fails every task this replica runs: it is stopping.
    pub(super) async fn abandon(&self) {
        let ids: Vec<String> = sync::lock(&self.running).keys().cloned().collect();
        for id in ids {
            if let Ok(Some(mut record)) = self.store.get(&id).await
                && !record.status.is_terminal()
            {
                record.fail("lcp serve stopped before the task finished".to_string());
                let _ = self.save(&record).await;
            }
        }
    }

    /// Writes `record` and publishes its change to every replica's listen streams.
    async fn save(&self, record: &Record) -> Result<(), String> {
        self.store.put(record).await?;
        match &self.store {
            Store::Memory(_) => {
                let _ = self.changes.send(Arc::new(record.clone()));
            }
            Store::Redis(redis) => {
                // Heard back through this replica's own subscription, as every replica hears it.
                let text = serde_json::to_string(record).map_err(|err| err.to_string())?;
                let mut command = redis::cmd("PUBLISH");
                command.arg(CHANGES_CHANNEL).arg(text);
                redis.run::<i64>(&command).await?;
            }
        }
        Ok(())
    }

    /// With a shared store, this replica subscribed to every replica's changes (once,
    /// then kept, connecting again when the connection drops); waits a bounded time
    /// for the first subscription.
    async fn hear(&self) {
        let Store::Redis(redis) = &self.store else { return };
        self.hearing
            .get_or_init(|| async {
                let info = redis.client.get_connection_info().clone();
                let settings = info.redis_settings().clone().set_protocol(redis::ProtocolVersion::RESP3);
                let Ok(client) = redis::Client::open(info.set_redis_settings(settings)) else { return };
                let (subscribed, first) = tokio::sync::oneshot::channel();
                tokio::spawn(hear_changes(client, self.changes.clone(), subscribed));
                let _ = tokio::time::timeout(HEARING_WITHIN, first).await;
            })
            .await;
    }

    /// Of the task ids a listen stream names, those its caller made: what the stream's
    /// acknowledgement says it honours (`taskIds`).
    pub(super) async fn honoured(&self, ids: &[String], caller: &str) -> Vec<String> {
        let mut honoured = Vec::new();
        for id in ids {
            if let Ok(Some(record)) = self.store.get(id).await
                && record.caller.as_deref() == Some(caller)
            {
                honoured.push(id.clone());
            }
        }
        honoured
    }

    /// Tells a `subscriptions/listen` stream (`request`) of the tasks its filter names
    /// that its caller made: each one's state now, then every change, whichever
    /// replica runs it, until the stream ends. A stream naming no task is told nothing.
    pub(super) fn forward(self: &Arc<Self>, request: &RequestContext<RoleServer>) {
        let parts = request.extensions.get::<hyper::http::request::Parts>();
        let Some(ListenedTasks(ids)) = parts.and_then(|parts| parts.extensions.get::<ListenedTasks>()).cloned() else {
            return;
        };
        let caller = super::caller_of(parts).key();
        let listener = Listener { peer: request.peer.clone(), subscription: request.id.clone(), told: HashMap::new() };
        let (tasks, ended) = (Arc::clone(self), request.ct.clone());
        tokio::spawn(async move { tasks.tell(ids, caller, listener, ended).await });
    }

    async fn tell(&self, ids: Vec<String>, caller: String, mut listener: Listener, ended: CancellationToken) {
        let mut changes = self.changes.subscribe();
        self.hear().await;
        let ours = |record: &Record| ids.contains(&record.task_id) && record.caller.as_deref() == Some(caller.as_str());
        for id in &ids {
            if let Ok(Some(record)) = self.store.get(id).await
                && ours(&record)
                && !listener.tell(&record).await
            {
                return;
            }
        }
        loop {
            let record = tokio::select! {
                () = ended.cancelled() => return,
                change = changes.recv() => match change {
                    Ok(record) => record,
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            };
            if ours(&record) && !listener.tell(&record).await {
                return;
            }
        }
    }

    /// The task `id` when `caller` made it; another caller's task is not found.
    async fn find(&self, id: &str, caller: &str) -> Result<Record, ErrorData> {
        let unknown = || ErrorData::invalid_params(format!("no task `{id}`"), Some(json!({ "taskId": id })));
        match self.store.get(id).await.map_err(|err| internal(&err))? {
            Some(record) if record.caller.as_deref() == Some(caller) => Ok(record),
            _ => Err(unknown()),
        }
    }

    async fn deliver(&self, record: &Record, message: Message) -> Result<(), ErrorData> {
        self.store.send(&record.task_id, message).await.map_err(|err| internal(&err))?;
        if let Some(running) = sync::lock(&self.running).get(&record.task_id) {
            running.wake.notify_one();
        }
        Ok(())
    }

    /// Runs the task to its end, keeping its record.
    async fn follow(&self, mut record: Record, run: TaskRun, wake: Arc<Notify>) {
        let TaskRun { mut events, cancel, able, finish, watcher, .. } = run;
        let saved = async |record: &Record| {
            let _ = self.save(record).await;
            if let Some(peer) = &watcher {
                let notification = TaskStatusNotification::new(record.detailed().into());
                let _ = peer.send_notification(ServerNotification::TaskStatusNotification(notification)).await;
            }
        };
        let mut pending: Option<Pending> = None;
        let mut renewed = tokio::time::Instant::now();
        let mut inbox = tokio::time::interval(if self.shared() { INBOX_EVERY } else { RENEW_EVERY });
        inbox.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let mut changed = false;
            tokio::select! {
                event = events.recv() => match event {
                    Some(Event::Done(result)) => {
                        settle(&mut record, result, &finish);
                        saved(&record).await;
                        return;
                    }
                    None => {
                        record.fail("the call ended without a result".to_string());
                        saved(&record).await;
                        return;
                    }
                    // A `become_task` after the first only changes the status.
                    Some(Event::Tell(Notice::Progress(status) | Notice::BecomeTask(status))) => {
                        record.status_message = Some(status.text).filter(|text| !text.is_empty());
                        changed = true;
                    }
                    Some(Event::Tell(Notice::Log(_))) => {}
                    Some(Event::Ask(question)) => {
                        // A question the client cannot take was answered at once.
                        if let Ok(asked) = Pending::ask(question, able) {
                            record.status = TaskStatus::InputRequired;
                            record.input_requests = Some(asked.outstanding());
                            pending = Some(asked);
                        }
                        changed = true;
                    }
                },
                () = wake.notified() => {}
                _ = inbox.tick() => {}
            }
            for message in self.store.receive(&record.task_id).await.unwrap_or_default() {
                match message {
                    Message::Cancel => {
                        cancel.cancel();
                        if let Some(asked) = pending.take() {
                            asked.question.refuse("the task was cancelled");
                        }
                        record.status = TaskStatus::Cancelled;
                        record.input_requests = None;
                        record.status_message = None;
                        record.touch();
                        saved(&record).await;
                        super::call::drain(events);
                        return;
                    }
                    Message::Responses(responses) => {
                        let Some(asked) = pending.take() else { continue };
                        pending = asked.take(&responses);
                        match &pending {
                            Some(waiting) => record.input_requests = Some(waiting.outstanding()),
                            None => {
                                record.status = TaskStatus::Working;
                                record.input_requests = None;
                            }
                        }
                        changed = true;
                    }
                }
            }
            if changed || renewed.elapsed() >= RENEW_EVERY {
                record.lease_until_ms = now_ms() + LEASE.as_millis() as u64;
                if changed {
                    record.touch();
                    saved(&record).await;
                } else {
                    let _ = self.store.put(&record).await;
                }
                renewed = tokio::time::Instant::now();
            }
        }
    }
}

/// A `subscriptions/listen` stream told of tasks.
struct Listener {
    peer: Peer<RoleServer>,
    /// The listen request's id: every notification on its stream names it.
    subscription: RequestId,
    /// What it was last told of each task (a change heard twice is told once).
    told: HashMap<String, String>,
}

impl Listener {
    /// Sends `notifications/tasks` with the task as `tasks/get` shows it; `false` once
    /// the stream is gone.
    async fn tell(&mut self, record: &Record) -> bool {
        let detailed = record.detailed();
        let text = serde_json::to_string(&detailed).unwrap_or_default();
        if self.told.get(&record.task_id) == Some(&text) {
            return true;
        }
        self.told.insert(record.task_id.clone(), text);
        let mut notification = ServerNotification::TaskStatusNotification(TaskStatusNotification::new(detailed.into()));
        notification.get_meta_mut().set_subscription_id(self.subscription.clone());
        self.peer.send_notification(notification).await.is_ok()
    }
}

/// Every replica's task changes from the shared store's channel, into `changes`, for as
/// long as the server runs; `subscribed` is told once the first subscription holds.
async fn hear_changes(
    client: redis::Client,
    changes: broadcast::Sender<Arc<Record>>,
    subscribed: tokio::sync::oneshot::Sender<()>,
) {
    let mut subscribed = Some(subscribed);
    loop {
        let (pushes, mut pushed) = mpsc::unbounded_channel();
        let config = redis::AsyncConnectionConfig::new().set_push_sender(pushes);
        if let Ok(mut connection) = client.get_multiplexed_async_connection_with_config(&config).await
            && connection.subscribe(CHANGES_CHANNEL).await.is_ok()
        {
            if let Some(subscribed) = subscribed.take() {
                let _ = subscribed.send(());
            }
            while let Some(push) = pushed.recv().await {
                match push.kind {
                    redis::PushKind::Message => {
                        let payload =
                            push.data.get(1).and_then(|value| redis::from_redis_value_ref::<String>(value).ok());
                        if let Some(record) = payload.and_then(|text| serde_json::from_str::<Record>(&text).ok()) {
                            let _ = changes.send(Arc::new(record));
                        }
                    }
                    redis::PushKind::Disconnection => break,
                    _ => {}
                }
            }
            drop(connection);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// What a task runs: its call's events and stop, what its client can be asked (as the
/// request that created it declared), and how its result becomes a `CallToolResult`.
pub(super) struct TaskRun {
    pub events: mpsc::UnboundedReceiver<Event>,
    pub cancel: Cancel,
    /// The task's first `statusMessage`, if any.
    pub status: Option<String>,
    /// The session that created it, told each change (`notifications/tasks`); a
    /// session-less client polls `tasks/get` instead.
    pub watcher: Option<Peer<RoleServer>>,
    pub able: Able,
    pub finish: Box<dyn Fn(ToolResult) -> rmcp::model::CallToolResult + Send + Sync>,
}

/// A question of the task's call, waiting for the client's `tasks/update`.
struct Pending {
    question: Question,
    /// Each request put to the client, under its key, not answered yet.
    asked: Vec<(String, HostRequest, Value)>,
    /// Answers so far: those the client gave, and those given without it.
    settled: Vec<(String, HostAnswer)>,
}

impl Pending {
    /// Puts `question` to the client: `Err` when none of it can be (then it is
    /// answered at once, saying why).
    fn ask(question: Question, able: Able) -> Result<Pending, ()> {
        let requests: Vec<(String, HostRequest)> = match &question.request {
            HostRequest::Batch(requests) => requests.clone(),
            single => vec![(input_key(single).to_string(), single.clone())],
        };
        let (mut asked, mut settled) = (Vec::new(), Vec::new());
        for (key, request) in requests {
            match host::outbound(&request, able) {
                Ok(outbound) => {
                    let wire = serde_json::to_value(outbound.input_request()).unwrap_or(Value::Null);
                    asked.push((key, request, wire));
                }
                Err(answer) => settled.push((key, answer)),
            }
        }
        if asked.is_empty() {
            let answer = match &question.request {
                HostRequest::Batch(_) => HostAnswer::Batch(settled),
                single => settled.pop().map_or_else(|| refused(single, "nothing to ask"), |(_, answer)| answer),
            };
            question.answer(answer);
            return Err(());
        }
        Ok(Pending { question, asked, settled })
    }

    /// The requests still waiting, as `inputRequests`.
    fn outstanding(&self) -> Value {
        let requests: Map<String, Value> =
            self.asked.iter().map(|(key, _, wire)| (key.clone(), wire.clone())).collect();
        Value::Object(requests)
    }

    /// Takes the client's answers: `None` once every request is answered (the
    /// question then has its answer), else what still waits.
    fn take(mut self, responses: &InputResponses) -> Option<Pending> {
        let mut waiting = Vec::new();
        for (key, request, wire) in std::mem::take(&mut self.asked) {
            match responses.get(&key) {
                Some(response) => {
                    let one = InputResponses::from([(input_key(&request).to_string(), response.clone())]);
                    self.settled.push((key, answered(&request, Some(&one), &[])));
                }
                None => waiting.push((key, request, wire)),
            }
        }
        self.asked = waiting;
        if !self.asked.is_empty() {
            return Some(self);
        }
        let Pending { question, mut settled, .. } = self;
        let answer = match &question.request {
            HostRequest::Batch(_) => HostAnswer::Batch(settled),
            single => settled.pop().map_or_else(|| refused(single, "the client did not answer"), |(_, answer)| answer),
        };
        question.answer(answer);
        None
    }
}

/// The record of a call that ended: `completed` with its result (a tool's own error
/// included, `isError: true`), `cancelled`, or `failed` when its worker died under it.
fn settle(record: &mut Record, result: ToolResult, finish: &dyn Fn(ToolResult) -> rmcp::model::CallToolResult) {
    record.input_requests = None;
    record.status_message = None;
    match result.outcome {
        Outcome::Cancelled => {
            record.status = TaskStatus::Cancelled;
            record.touch();
        }
        Outcome::Died => {
            let why = result.error.clone().unwrap_or_else(|| "the worker running the tool died".to_string());
            record.fail(format!("`{}` did not finish: {why}", record.tool));
        }
        _ => {
            record.status = TaskStatus::Completed;
            let mut output = serde_json::to_value(finish(result)).unwrap_or(Value::Null);
            if let Some(object) = output.as_object_mut() {
                object.remove("resultType");
            }
            record.result = Some(output);
            record.touch();
        }
    }
}

fn internal(message: &str) -> ErrorData {
    ErrorData::internal_error(message.to_string(), None)
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_millis() as u64)
}

/// `time` as ISO 8601 in UTC, to the millisecond (`2026-12-03T19:04:05.123Z`).
fn timestamp(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let (days, seconds) = ((since.as_secs() / 86_400) as i64, since.as_secs() % 86_400);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601_in_utc() {
        assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let moment = UNIX_EPOCH + Duration::from_millis(1_796_324_645_123);
        assert_eq!(timestamp(moment), "2026-12-03T19:04:05.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(timestamp(leap), "2000-02-29T00:00:00.000Z");
    }
}
