"""Response shapes of the queues API (exactly what the views answer; the OpenAPI schema is generated from these)."""

from __future__ import annotations

from rest_framework import serializers


class KueueQueryParams(serializers.Serializer):
    cluster = serializers.CharField(required=False, allow_blank=True, max_length=253,
                                    help_text="A cluster's name (default: the default cluster).")


class KueueUsageSerializer(serializers.Serializer):
    flavor = serializers.CharField()
    resource = serializers.CharField()
    nominal = serializers.FloatField(help_text="Nominal quota (GPUs and CPUs as counts, memory in bytes).")
    used = serializers.FloatField(help_text="Reserved by admitted workloads.")
    borrowed = serializers.FloatField(help_text="Of `used`, what is borrowed from the cohort.")
    lendable = serializers.FloatField(help_text="Unused quota the cohort may borrow from this queue now.")
    borrowable = serializers.FloatField(help_text="What this queue could borrow from its cohort now.")
    borrowingLimit = serializers.FloatField(allow_null=True)
    lendingLimit = serializers.FloatField(allow_null=True)


class KueueLocalUsageSerializer(serializers.Serializer):
    flavor = serializers.CharField()
    resource = serializers.CharField()
    used = serializers.FloatField()


class KueueClusterQueueSerializer(serializers.Serializer):
    name = serializers.CharField()
    cohort = serializers.CharField(help_text="Empty without a cohort.")
    queueingStrategy = serializers.CharField()
    fairSharingWeight = serializers.FloatField()
    weightedShare = serializers.FloatField()
    active = serializers.BooleanField()
    pending = serializers.IntegerField()
    reserving = serializers.IntegerField()
    admitted = serializers.IntegerField()
    usage = KueueUsageSerializer(many=True)


class KueueLocalQueueSerializer(serializers.Serializer):
    namespace = serializers.CharField()
    name = serializers.CharField()
    clusterQueue = serializers.CharField()
    pending = serializers.IntegerField()
    reserving = serializers.IntegerField()
    admitted = serializers.IntegerField()
    usage = KueueLocalUsageSerializer(many=True)


class KueueCohortSerializer(serializers.Serializer):
    name = serializers.CharField()
    clusterQueues = serializers.ListField(child=serializers.CharField())


class KueueFlavorSerializer(serializers.Serializer):
    name = serializers.CharField()
    nodeLabels = serializers.DictField(child=serializers.CharField())


class KueueJobSerializer(serializers.Serializer):
    kind = serializers.CharField()
    name = serializers.CharField()
    uid = serializers.CharField()


class KueueWorkloadSerializer(serializers.Serializer):
    namespace = serializers.CharField()
    name = serializers.CharField()
    localQueue = serializers.CharField()
    clusterQueue = serializers.CharField()
    state = serializers.ChoiceField(choices=["pending", "admitted", "inactive"])
    priority = serializers.IntegerField()
    positionInClusterQueue = serializers.IntegerField(allow_null=True, help_text="1-based; null when unknown.")
    positionInLocalQueue = serializers.IntegerField(allow_null=True, help_text="1-based; null when unknown.")
    reason = serializers.CharField(help_text="Kueue's QuotaReserved reason while pending (WaitingForQuota, …).")
    message = serializers.CharField()
    job = KueueJobSerializer(allow_null=True, help_text="The owning TrainJob (or other job), when known.")
    requests = serializers.DictField(child=serializers.FloatField())


class KueuePendingLineSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["workload", "hidden"],
                                   help_text='"hidden": `count` workloads of namespaces you may not see.')
    count = serializers.IntegerField()
    workload = KueueWorkloadSerializer(allow_null=True)


class KueueFreshnessFields(serializers.Serializer):
    cluster = serializers.CharField()
    asOf = serializers.DateTimeField(allow_null=True, help_text="When the queue watcher last wrote.")
    stale = serializers.BooleanField()
    staleReason = serializers.CharField()
    kueueServed = serializers.BooleanField()
    positionSource = serializers.ChoiceField(choices=["visibility-api", "unknown"])


class KueueOverviewSerializer(KueueFreshnessFields):
    clusterQueues = KueueClusterQueueSerializer(many=True)
    localQueues = KueueLocalQueueSerializer(many=True)
    hiddenLocalQueues = serializers.IntegerField(help_text="LocalQueues of namespaces you may not see.")
    cohorts = KueueCohortSerializer(many=True)
    flavors = KueueFlavorSerializer(many=True)


class KueueClusterQueueDetailSerializer(KueueFreshnessFields):
    clusterQueue = KueueClusterQueueSerializer()
    localQueues = KueueLocalQueueSerializer(many=True)
    hiddenLocalQueues = serializers.IntegerField()
    pending = KueuePendingLineSerializer(many=True, help_text="In Kueue's order.")
    pendingTotal = serializers.IntegerField()
    admitted = KueueWorkloadSerializer(many=True)
    admittedHidden = serializers.IntegerField()


class KueueLocalQueueDetailSerializer(KueueFreshnessFields):
    localQueue = KueueLocalQueueSerializer()
    clusterQueue = KueueClusterQueueSerializer(allow_null=True)
    pending = KueueWorkloadSerializer(many=True, help_text="In Kueue's order within the LocalQueue.")
    admitted = KueueWorkloadSerializer(many=True)
