/// One decoded characteristic value, for a driver that receives (UUID, bytes) pairs.
public enum GATTReading: Hashable, Sendable {
    case heartRate(HeartRateMeasurement)
    case bodySensorLocation(BodySensorLocation)
    case batteryLevel(BatteryLevel)
    /// A Device Information string characteristic: which one, and its text.
    case deviceInformation(characteristic: UInt16, value: String)
    case systemID(SystemID)
    case pnpID(PnPID)
    case csc(CSCMeasurement)
    case cscFeature(CSCFeature)
    case rsc(RSCMeasurement)
    case cyclingPower(CyclingPowerMeasurement)
    case cyclingPowerFeature(CyclingPowerFeature)
    case fitnessMachineFeature(FitnessMachineFeature)
    case treadmill(TreadmillData)
    case crossTrainer(CrossTrainerData)
    case rower(RowerData)
    case indoorBike(IndoorBikeData)
    case weight(WeightScaleMeasurement)
    case weightScaleFeature(WeightScaleFeature)
    case bodyComposition(BodyCompositionMeasurement)
    case bloodPressure(BloodPressureMeasurement)
    case intermediateCuffPressure(BloodPressureMeasurement)
    case temperature(TemperatureMeasurement)
    case intermediateTemperature(TemperatureMeasurement)
    case plxSpotCheck(PLXSpotCheckMeasurement)
    case plxContinuous(PLXContinuousMeasurement)
    case glucose(GlucoseMeasurement)
    case glucoseContext(GlucoseMeasurementContext)
    case recordAccessControlPoint(RecordAccessControlPoint.Response)
}

public enum GATTProfileDecoder {
    /// Every characteristic `decode(characteristic:_:)` understands.
    public static let supportedCharacteristics: Set<UInt16> = DeviceInformation.stringCharacteristics.union([
        GATTCharacteristic.heartRateMeasurement, GATTCharacteristic.bodySensorLocation,
        GATTCharacteristic.batteryLevel, GATTCharacteristic.systemID, GATTCharacteristic.pnpID,
        GATTCharacteristic.cscMeasurement, GATTCharacteristic.cscFeature, GATTCharacteristic.rscMeasurement,
        GATTCharacteristic.cyclingPowerMeasurement, GATTCharacteristic.cyclingPowerFeature,
        GATTCharacteristic.fitnessMachineFeature, GATTCharacteristic.treadmillData,
        GATTCharacteristic.crossTrainerData, GATTCharacteristic.rowerData, GATTCharacteristic.indoorBikeData,
        GATTCharacteristic.weightMeasurement, GATTCharacteristic.weightScaleFeature,
        GATTCharacteristic.bodyCompositionMeasurement, GATTCharacteristic.bloodPressureMeasurement,
        GATTCharacteristic.intermediateCuffPressure, GATTCharacteristic.temperatureMeasurement,
        GATTCharacteristic.intermediateTemperature, GATTCharacteristic.plxSpotCheckMeasurement,
        GATTCharacteristic.plxContinuousMeasurement, GATTCharacteristic.glucoseMeasurement,
        GATTCharacteristic.glucoseMeasurementContext, GATTCharacteristic.recordAccessControlPoint,
    ])

    /// Decodes `bytes` as the value of `characteristic`; nil for a characteristic this module does
    /// not decode. Throws `ProfileDecodeError` for malformed values; never traps.
    public static func decode(characteristic: UInt16, _ bytes: [UInt8]) throws(ProfileDecodeError) -> GATTReading? {
        typealias C = GATTCharacteristic
        switch characteristic {
        case C.heartRateMeasurement: return .heartRate(try HeartRateMeasurement.decode(bytes))
        case C.bodySensorLocation: return .bodySensorLocation(try BodySensorLocation.decode(bytes))
        case C.batteryLevel: return .batteryLevel(try BatteryLevel.decode(bytes))
        case _ where DeviceInformation.stringCharacteristics.contains(characteristic):
            return .deviceInformation(characteristic: characteristic, value: DeviceInformation.string(bytes))
        case C.systemID: return .systemID(try SystemID.decode(bytes))
        case C.pnpID: return .pnpID(try PnPID.decode(bytes))
        case C.cscMeasurement: return .csc(try CSCMeasurement.decode(bytes))
        case C.cscFeature: return .cscFeature(try CSCFeature.decode(bytes))
        case C.rscMeasurement: return .rsc(try RSCMeasurement.decode(bytes))
        case C.cyclingPowerMeasurement: return .cyclingPower(try CyclingPowerMeasurement.decode(bytes))
        case C.cyclingPowerFeature: return .cyclingPowerFeature(try CyclingPowerFeature.decode(bytes))
        case C.fitnessMachineFeature: return .fitnessMachineFeature(try FitnessMachineFeature.decode(bytes))
        case C.treadmillData: return .treadmill(try TreadmillData.decode(bytes))
        case C.crossTrainerData: return .crossTrainer(try CrossTrainerData.decode(bytes))
        case C.rowerData: return .rower(try RowerData.decode(bytes))
        case C.indoorBikeData: return .indoorBike(try IndoorBikeData.decode(bytes))
        case C.weightMeasurement: return .weight(try WeightScaleMeasurement.decode(bytes))
        case C.weightScaleFeature: return .weightScaleFeature(try WeightScaleFeature.decode(bytes))
        case C.bodyCompositionMeasurement: return .bodyComposition(try BodyCompositionMeasurement.decode(bytes))
        case C.bloodPressureMeasurement: return .bloodPressure(try BloodPressureMeasurement.decode(bytes))
        case C.intermediateCuffPressure:
            return .intermediateCuffPressure(try BloodPressureMeasurement.decodeIntermediateCuffPressure(bytes))
        case C.temperatureMeasurement: return .temperature(try TemperatureMeasurement.decode(bytes))
        case C.intermediateTemperature: return .intermediateTemperature(try TemperatureMeasurement.decodeIntermediate(bytes))
        case C.plxSpotCheckMeasurement: return .plxSpotCheck(try PLXSpotCheckMeasurement.decode(bytes))
        case C.plxContinuousMeasurement: return .plxContinuous(try PLXContinuousMeasurement.decode(bytes))
        case C.glucoseMeasurement: return .glucose(try GlucoseMeasurement.decode(bytes))
        case C.glucoseMeasurementContext: return .glucoseContext(try GlucoseMeasurementContext.decode(bytes))
        case C.recordAccessControlPoint: return .recordAccessControlPoint(try RecordAccessControlPoint.decodeResponse(bytes))
        default: return nil
        }
    }
}
