""" Contains all the data models used in inputs/outputs """

from .api_key_info import ApiKeyInfo
from .api_key_info_role import ApiKeyInfoRole
from .app import App
from .app_create import AppCreate
from .app_create_criticality import AppCreateCriticality
from .app_create_default_output_type_0 import AppCreateDefaultOutputType0
from .app_create_prefer import AppCreatePrefer
from .app_create_slo_policy import AppCreateSloPolicy
from .app_created import AppCreated
from .app_created_criticality import AppCreatedCriticality
from .app_created_default_output_type_0 import AppCreatedDefaultOutputType0
from .app_created_prefer import AppCreatedPrefer
from .app_created_slo_policy import AppCreatedSloPolicy
from .app_criticality import AppCriticality
from .app_default_output_type_0 import AppDefaultOutputType0
from .app_prefer import AppPrefer
from .app_slo_policy import AppSloPolicy
from .app_update import AppUpdate
from .app_update_criticality import AppUpdateCriticality
from .app_update_default_output_type_0 import AppUpdateDefaultOutputType0
from .app_update_prefer import AppUpdatePrefer
from .app_update_slo_policy import AppUpdateSloPolicy
from .body_register_model import BodyRegisterModel
from .body_submit_job import BodySubmitJob
from .branch_condition import BranchCondition
from .concurrency_point import ConcurrencyPoint
from .configuration_curve import ConfigurationCurve
from .error_body import ErrorBody
from .error_detail import ErrorDetail
from .error_response import ErrorResponse
from .error_response_details_type_0 import ErrorResponseDetailsType0
from .event import Event
from .event_details_type_0 import EventDetailsType0
from .event_kind import EventKind
from .event_outcome import EventOutcome
from .event_page import EventPage
from .failover_note import FailoverNote
from .feedback import Feedback
from .feedback_answer import FeedbackAnswer
from .feedback_item import FeedbackItem
from .feedback_result import FeedbackResult
from .feedback_result_models import FeedbackResultModels
from .feedback_result_weights import FeedbackResultWeights
from .hardware_kind import HardwareKind
from .head_report import HeadReport
from .http_validation_error import HTTPValidationError
from .infer_request import InferRequest
from .infer_request_inputs_type_1 import InferRequestInputsType1
from .infer_request_task_type_0 import InferRequestTaskType0
from .infer_response import InferResponse
from .infer_response_outputs import InferResponseOutputs
from .inference_request import InferenceRequest
from .inference_request_parameters import InferenceRequestParameters
from .inference_request_parameters_task_type_0 import InferenceRequestParametersTaskType0
from .inference_response import InferenceResponse
from .inference_response_parameters import InferenceResponseParameters
from .job import Job
from .job_decision import JobDecision
from .job_error import JobError
from .job_state import JobState
from .latency_point import LatencyPoint
from .list_events_kind_type_0 import ListEventsKindType0
from .list_variants_sort import ListVariantsSort
from .list_variants_status_type_0 import ListVariantsStatusType0
from .load_point import LoadPoint
from .metadata_tensor import MetadataTensor
from .metadata_tensor_datatype import MetadataTensorDatatype
from .missing_model import MissingModel
from .model import Model
from .model_accepted import ModelAccepted
from .model_accepted_status import ModelAcceptedStatus
from .model_metadata import ModelMetadata
from .model_metadata_parameters import ModelMetadataParameters
from .model_metadata_parameters_kind import ModelMetadataParametersKind
from .model_ready import ModelReady
from .model_status import ModelStatus
from .parity_status import ParityStatus
from .parity_status_metric_type_0 import ParityStatusMetricType0
from .parity_status_state import ParityStatusState
from .pipeline import Pipeline
from .pipeline_create import PipelineCreate
from .pipeline_edge import PipelineEdge
from .pipeline_edge_inputs import PipelineEdgeInputs
from .pipeline_plan import PipelinePlan
from .pipeline_plan_error_type_0 import PipelinePlanErrorType0
from .pipeline_stage import PipelineStage
from .plan_ask import PlanAsk
from .query_latency import QueryLatency
from .redundancy import Redundancy
from .redundancy_kind import RedundancyKind
from .request_input import RequestInput
from .request_input_datatype import RequestInputDatatype
from .request_output import RequestOutput
from .requested_output_parameters import RequestedOutputParameters
from .response_output import ResponseOutput
from .response_output_datatype import ResponseOutputDatatype
from .selection import Selection
from .selection_policy import SelectionPolicy
from .selection_report import SelectionReport
from .selection_report_policy import SelectionReportPolicy
from .selection_report_weights import SelectionReportWeights
from .server_live import ServerLive
from .server_metadata import ServerMetadata
from .server_ready import ServerReady
from .signature_out import SignatureOut
from .stage_plan import StagePlan
from .tensor_parameters import TensorParameters
from .tensor_spec_out import TensorSpecOut
from .validation_error import ValidationError
from .validation_error_context import ValidationErrorContext
from .variant import Variant
from .variant_capacity import VariantCapacity
from .variant_progress import VariantProgress
from .variant_status import VariantStatus
from .worker import Worker
from .worker_instances import WorkerInstances

__all__ = (
    "ApiKeyInfo",
    "ApiKeyInfoRole",
    "App",
    "AppCreate",
    "AppCreateCriticality",
    "AppCreated",
    "AppCreatedCriticality",
    "AppCreatedDefaultOutputType0",
    "AppCreateDefaultOutputType0",
    "AppCreatedPrefer",
    "AppCreatedSloPolicy",
    "AppCreatePrefer",
    "AppCreateSloPolicy",
    "AppCriticality",
    "AppDefaultOutputType0",
    "AppPrefer",
    "AppSloPolicy",
    "AppUpdate",
    "AppUpdateCriticality",
    "AppUpdateDefaultOutputType0",
    "AppUpdatePrefer",
    "AppUpdateSloPolicy",
    "BodyRegisterModel",
    "BodySubmitJob",
    "BranchCondition",
    "ConcurrencyPoint",
    "ConfigurationCurve",
    "ErrorBody",
    "ErrorDetail",
    "ErrorResponse",
    "ErrorResponseDetailsType0",
    "Event",
    "EventDetailsType0",
    "EventKind",
    "EventOutcome",
    "EventPage",
    "FailoverNote",
    "Feedback",
    "FeedbackAnswer",
    "FeedbackItem",
    "FeedbackResult",
    "FeedbackResultModels",
    "FeedbackResultWeights",
    "HardwareKind",
    "HeadReport",
    "HTTPValidationError",
    "InferenceRequest",
    "InferenceRequestParameters",
    "InferenceRequestParametersTaskType0",
    "InferenceResponse",
    "InferenceResponseParameters",
    "InferRequest",
    "InferRequestInputsType1",
    "InferRequestTaskType0",
    "InferResponse",
    "InferResponseOutputs",
    "Job",
    "JobDecision",
    "JobError",
    "JobState",
    "LatencyPoint",
    "ListEventsKindType0",
    "ListVariantsSort",
    "ListVariantsStatusType0",
    "LoadPoint",
    "MetadataTensor",
    "MetadataTensorDatatype",
    "MissingModel",
    "Model",
    "ModelAccepted",
    "ModelAcceptedStatus",
    "ModelMetadata",
    "ModelMetadataParameters",
    "ModelMetadataParametersKind",
    "ModelReady",
    "ModelStatus",
    "ParityStatus",
    "ParityStatusMetricType0",
    "ParityStatusState",
    "Pipeline",
    "PipelineCreate",
    "PipelineEdge",
    "PipelineEdgeInputs",
    "PipelinePlan",
    "PipelinePlanErrorType0",
    "PipelineStage",
    "PlanAsk",
    "QueryLatency",
    "Redundancy",
    "RedundancyKind",
    "RequestedOutputParameters",
    "RequestInput",
    "RequestInputDatatype",
    "RequestOutput",
    "ResponseOutput",
    "ResponseOutputDatatype",
    "Selection",
    "SelectionPolicy",
    "SelectionReport",
    "SelectionReportPolicy",
    "SelectionReportWeights",
    "ServerLive",
    "ServerMetadata",
    "ServerReady",
    "SignatureOut",
    "StagePlan",
    "TensorParameters",
    "TensorSpecOut",
    "ValidationError",
    "ValidationErrorContext",
    "Variant",
    "VariantCapacity",
    "VariantProgress",
    "VariantStatus",
    "Worker",
    "WorkerInstances",
)
