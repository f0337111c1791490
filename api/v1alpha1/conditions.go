package v1alpha1

// Condition types. Ready is always a summary of the others; Reconciling and
// Stalled follow kstatus so that generic tools (kubectl wait, Flux, Argo CD,
// kstatus) understand Annex objects.
const (
	// ConditionReady summarises the object: True when everything it asks for
	// is in place and healthy.
	ConditionReady = "Ready"
	// ConditionReconciling is True while Annex is working towards the spec.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when Annex cannot make progress without a
	// change from a person (a terminal error) or after a timeout.
	ConditionStalled = "Stalled"

	// ConditionResolved is True when a version was chosen for an installation.
	ConditionResolved = "Resolved"
	// ConditionInstalled is True when the rendered objects of the resolved
	// version were applied.
	ConditionInstalled = "Installed"

	// ConditionFetchFailed is True on a Catalog whose source cannot be read
	// while Annex serves the content of its last good sync.
	ConditionFetchFailed = "FetchFailed"

	// ConditionReachable is True when a ManagedCluster's API server answers.
	ConditionReachable = "Reachable"
	// ConditionUpgradeReady is True when a ManagedCluster's installations
	// are ready for its spec.upgradeTarget.
	ConditionUpgradeReady = "UpgradeReady"
	// ConditionWarnings is True while a package renders with warnings (a
	// patch of an extension that matches nothing, a cleanup plan that does
	// not render); its message lists them.
	ConditionWarnings = "Warnings"
	// ConditionMaintenanceWindows is False on a ManagedCluster whose
	// spec.maintenanceWindows cannot be read; its message names each bad
	// field. Rollouts do not change the cluster until they are fixed. It
	// is absent while the windows are valid.
	ConditionMaintenanceWindows = "MaintenanceWindows"
	// ConditionVerified is True on an installation whose artifact a
	// trusted identity signed, False when its catalog's policy could not
	// verify it (refused under Enforce, installed under Audit); absent
	// when the catalog asks for no verification.
	ConditionVerified = "Verified"
)

// Reasons. Each names the cause in CamelCase; the condition message says what
// to change.
const (
	ReasonSucceeded   = "Succeeded"
	ReasonProgressing = "Progressing"

	// Catalog reasons.
	ReasonFetchFailed   = "FetchFailed"
	ReasonSuspended     = "Suspended"
	ReasonSourceInvalid = "SourceInvalid"

	// Installation reasons.
	ReasonExtensionNotFound   = "ExtensionNotFound"
	ReasonNoMatchingVersion   = "NoMatchingVersion"
	ReasonDependencyNotReady  = "DependencyNotReady"
	ReasonClusterUnavailable  = "ClusterUnavailable"
	ReasonArtifactFailed      = "ArtifactFailed"
	ReasonDigestMismatch      = "DigestMismatch"
	ReasonValuesInvalid       = "ValuesInvalid"
	ReasonValuesSourceMissing = "ValuesSourceMissing"
	ReasonRenderFailed        = "RenderFailed"
	ReasonApplyFailed         = "ApplyFailed"
	ReasonOwnershipConflict   = "OwnershipConflict"
	ReasonWaitingForHealth    = "WaitingForHealth"
	ReasonHealthTimeout       = "HealthTimeout"
	ReasonUninstalling        = "Uninstalling"
	ReasonUninstallFailed     = "UninstallFailed"
	ReasonDeletionHeld        = "DeletionHeld"
	ReasonHookFailed          = "HookFailed"
	ReasonRetrying            = "Retrying"
	ReasonRolledBack          = "RolledBack"
	ReasonInstallFailed       = "InstallFailed"
	ReasonDependencyCycle     = "DependencyCycle"
	ReasonConflict            = "Conflict"
	ReasonRecordTooLarge      = "RecordTooLarge"
	ReasonValuesNotShared     = "ValuesNotShared"
	ReasonUpgradeBlocked      = "UpgradeBlocked"
	// ReasonAdoptionRefused: spec.adopt names something Annex cannot
	// take over as it is (a pending Helm release, another chart or
	// version, an object of another installation); the message says
	// what to do.
	ReasonAdoptionRefused = "AdoptionRefused"

	// ReasonUnsafeCRDChange: a change would apply a CRD whose difference
	// from the installed one can break stored objects or clients, and
	// spec.upgrade.crdPolicy does not let it.
	ReasonUnsafeCRDChange = "UnsafeCRDChange"
	// ReasonCRDChangeWarnings: a change applied (Warn, Force) or kept out
	// (Skip) CRD changes that the Warnings condition lists.
	ReasonCRDChangeWarnings = "CRDChangeWarnings"
	// ReasonStorageMigrationFailed: rewriting the objects of a CRD at its
	// storage version, or trimming its status.storedVersions, failed.
	ReasonStorageMigrationFailed = "StorageMigrationFailed"

	// ReasonInvalidMaintenanceWindow: a ManagedCluster's
	// spec.maintenanceWindows has a schedule, time zone or duration that
	// cannot be read.
	ReasonInvalidMaintenanceWindow = "InvalidMaintenanceWindow"

	// ReasonFinalizersPending: deletion has waited spec.uninstall.timeout
	// for custom resources whose finalizers are not done.
	ReasonFinalizersPending = "FinalizersPending"
	// ReasonPermissionDenied: the installation's ServiceAccount may not do
	// what the extension needs, or does not exist.
	ReasonPermissionDenied = "PermissionDenied"
	// ReasonTargetNotAllowed: the manager restricts targets and the
	// installation's namespace has no grant for its target.
	ReasonTargetNotAllowed = "TargetNotAllowed"
	// ReasonScopedGrantsRefused: spec.scopedGrants cannot narrow a grant
	// of the extension soundly.
	ReasonScopedGrantsRefused = "ScopedGrantsRefused"

	// Signature verification (spec.verify of a Catalog).
	// ReasonVerified: a trusted identity signed the artifact.
	ReasonVerified = "Verified"
	// ReasonSignatureMissing: the artifact has no signature the policy's
	// provider can read.
	ReasonSignatureMissing = "SignatureMissing"
	// ReasonSignatureInvalid: a signature is malformed, or a trusted
	// signature covers another digest (the artifact was replaced).
	ReasonSignatureInvalid = "SignatureInvalid"
	// ReasonIdentityMismatch: the artifact is signed, but by none of the
	// trusted identities.
	ReasonIdentityMismatch = "IdentityMismatch"
	// ReasonVerificationPolicyInvalid: the policy cannot be used (a key
	// that is not a PEM public key, a Secret without the key).
	ReasonVerificationPolicyInvalid = "VerificationPolicyInvalid"

	// Packages and their plans.
	ReasonPlanRunning   = "PlanRunning"
	ReasonPlanFailed    = "PlanFailed"
	ReasonPlanAbandoned = "PlanAbandoned"
	ReasonBaseNotFound  = "BaseNotFound"
	ReasonCleanupFailed = "CleanupFailed"
)

// Labels and annotations Annex puts on the objects it writes.
const (
	// LabelCatalog names the Catalog an Extension was synced from.
	LabelCatalog = "annex.dev/catalog"
	// LabelShard on a ManagedCluster names the shard of managers that
	// owns it (`annex manager --shard`); a cluster without it belongs to
	// the default shard, as does the hub itself.
	LabelShard = "annex.dev/shard"
	// AnnotationSyncRequestedAt on a Catalog asks for a sync now; its
	// value (annexctl writes the time) only has to change.
	AnnotationSyncRequestedAt = "annex.dev/sync-requested-at"
	// AnnotationValuesRequested on an Extension asks the manager to read
	// the values schema and values.yaml of the versions it lists (comma
	// separated) into status.values; the manager removes each version it
	// has answered.
	AnnotationValuesRequested = "annex.dev/values-requested"
	// LabelManagedBy marks every object Annex applies into a cluster.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of LabelManagedBy.
	ManagedByValue = "annex"
	// LabelInstallationName and LabelInstallationNamespace name the
	// ExtensionInstallation that owns an applied object.
	LabelInstallationName      = "annex.dev/installation"
	LabelInstallationNamespace = "annex.dev/installation-namespace"

	// LabelAddedFor marks an ExtensionInstallation that Annex created because
	// another installation depends on its extension (value "dependencies").
	// Annex removes it when no installation needs it any more.
	LabelAddedFor = "annex.dev/added-for"
	// AnnotationRequiredBy on such an installation says which installation
	// it was first added for, and why.
	AnnotationRequiredBy = "annex.dev/required-by"

	// LabelRevision numbers the revision record Secrets of an installation.
	LabelRevision = "annex.dev/revision"
	// RevisionSecretType is the type of revision record Secrets.
	RevisionSecretType = "annex.dev/revision"
	// RecordPieceSecretType is the type of the Secrets holding the pieces
	// of large records, named annex.piece.<sha256 hex> after their content
	// and owned by every installation whose records use them; past 500
	// owners, by the copies annex.piece.<hex>.16-<n> and .256-<n> (a
	// bucket of the installation's UID), then annex.piece.<hex>.<UID>.
	RecordPieceSecretType = "annex.dev/record-piece"
	// AnnotationDigest on a record piece is the sha256 digest of its data.
	AnnotationDigest = "annex.dev/digest"

	// AnnotationDependencies on a Chart.yaml lists the extensions a chart
	// needs, as a YAML list of {name, version}.
	AnnotationDependencies = "annex.dev/dependencies"
	// AnnotationReadyCondition on an applied object names the status
	// condition whose True means it is ready (spec.resources[].readyCondition).
	AnnotationReadyCondition = "annex.dev/ready-condition"
	// AnnotationAwaitStatus on an applied custom resource (every one of
	// spec.resources) says it is not ready before its controller has
	// written a status: kstatus alone takes a resource without conditions
	// as ready.
	AnnotationAwaitStatus = "annex.dev/await-status"
	// AnnotationDisplayName on a Chart.yaml is the extension's display name.
	AnnotationDisplayName = "annex.dev/display-name"

	// FinalizerUninstall holds an ExtensionInstallation until its inventory
	// is removed from the cluster.
	FinalizerUninstall = "annex.dev/uninstall"
	// AnnotationShareValuesWith on a Namespace lists the namespaces whose
	// installations may read values from its Secrets and ConfigMaps
	// (comma-separated, or "*"). Only the hub admin, who controls
	// Namespaces, grants it.
	AnnotationShareValuesWith = "annex.dev/share-values-with"
	// AnnotationAllowTargetNamespaces and AnnotationAllowClusters on a
	// Namespace list the other namespaces and the ManagedClusters its
	// installations may install into when the manager restricts targets
	// (comma-separated, or "*"). Only the hub admin grants them.
	AnnotationAllowTargetNamespaces = "annex.dev/allow-target-namespaces"
	AnnotationAllowClusters         = "annex.dev/allow-clusters"

	// LabelProfile names the ExtensionProfile an installation was created
	// for, and LabelProfileCluster its cluster ("hub" for the hub).
	LabelProfile        = "annex.dev/profile"
	LabelProfileCluster = "annex.dev/profile-cluster"
	// AnnotationProfileDefaults on a ManagedCluster (or, for the hub, on
	// the profile) lists, per profile, the Default extensions it has
	// received once, so that a deleted one is not created again.
	AnnotationProfileDefaultsPrefix = "profiles.annex.dev/"
	// FinalizerProfile holds an ExtensionProfile until its installations
	// are removed as its removalPolicy says.
	FinalizerProfile = "annex.dev/profile-installations"
	// ConditionConflict is True on a profile that another profile
	// overrides for some cluster.
	ConditionConflict = "Conflict"

	// FinalizerClusterInstallations holds a ManagedCluster until its
	// installations are uninstalled (or released, with deletionPolicy
	// Orphan).
	FinalizerClusterInstallations = "annex.dev/cluster-installations"

	// FieldManager is the server-side apply field manager of every write
	// Annex makes into a cluster.
	FieldManager = "annex"
)
