"""dpauc-flower-app: FedAvg training and a private AUC of the global model every round."""
